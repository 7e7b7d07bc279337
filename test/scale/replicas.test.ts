import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type PlatformClient } from '../../src/client/index.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { CliProcess, waitReady } from '../cli/cli-process.js';
import { underCi } from '../fixtures/ci.js';
import { consumerState, createConsumer, tempDir, TENANT, untilSettled, waitFor } from '../worker/harness.js';
import { appendEffectEvents, readEffects, runArgs, summarize } from './effects.js';

/**
 * Issue 4, done-when: two `durable-worker run` processes x 4 workers on one durable consumer, sharing
 * one Redis (then PostgreSQL) idempotency store. A short lease and a few events slower than it on
 * their first delivery make batches requeue and move between processes; one process is killed
 * (SIGKILL) mid-run and replaced by a new one (a new pod: new worker ids, so its leases must expire
 * and be redelivered to whichever process pulls next). Every event's effect must be recorded, extra
 * effects only for events of the leases the killed process held, and the cursor must reach the head.
 */
const STORES = [
  { name: 'redis', variable: 'REDIS_URL', url: process.env.REDIS_URL },
  { name: 'postgres', variable: 'DATABASE_URL', url: process.env.DATABASE_URL },
] as const;

describe('replica test environment', () => {
  for (const store of STORES) {
    // CI must exercise the real stores: a missing variable fails there instead of skipping quietly.
    it.runIf(underCi())(`has ${store.variable} in CI`, () => {
      expect(store.url, `${store.variable} must be set in CI (eval "$(bash .ci/services.sh)")`).toBeTruthy();
    });
    if (store.url === undefined) console.warn(`[scale] ${store.name} replica test skipped: ${store.variable} is not set`);
  }
});

const EVENTS = 3_000;
const WORKERS = 4;
const CONCURRENCY = 4;
const VISIBILITY_SECONDS = 3;

let emulator: RunningEmulator;
let client: PlatformClient;
const children: CliProcess[] = [];

beforeAll(async () => {
  emulator = await startEmulator({ port: 0 });
  client = createClient({ baseUrl: emulator.url, tenant: TENANT, clientId: 'dev-client', clientSecret: 'dev-secret' });
});
afterEach(() => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
});
afterAll(async () => {
  await client?.close();
  await emulator?.close();
});

for (const store of STORES) {
  describe.skipIf(store.url === undefined)(`two replicas sharing ${store.name}`, () => {
    it('one replica killed and replaced mid-run: every effect recorded, extra effects only for events of its leases, cursor at head', async () => {
      const dir = tempDir(`replicas-${store.name}`);
      const effects = join(dir, 'effects.log');
      const destination = await createConsumer(emulator, `replicas-${store.name}`);
      // One key namespace for every replica: that is what makes the store shared.
      const idempotencyPrefix = `replicas-${randomUUID()}`;
      const env = { DW_TEST_EFFECTS_FILE: effects, DW_TEST_EFFECT_DELAY_MS: '10' };
      const args = (workerIdPrefix: string) =>
        runArgs(emulator, destination, dir, {
          workers: WORKERS,
          limit: 20,
          concurrency: CONCURRENCY,
          visibility: VISIBILITY_SECONDS,
          'shutdown-timeout': 1,
          isolation: 'thread',
          idempotency: store.url as string,
          'idempotency-prefix': idempotencyPrefix,
          'worker-id-prefix': workerIdPrefix,
          'log-level': 'info',
          // The shared servers outlive the test: let its done marks expire soon.
          'idempotency-ttl': '10m',
        });
      const start = (workerIdPrefix: string) => {
        const child = new CliProcess(args(workerIdPrefix), { env });
        children.push(child);
        return child;
      };

      const a = start('replica-a');
      const b = start('replica-b');
      await Promise.all([waitReady(a), waitReady(b)]);
      // Every 149th event outlives the lease on its first run: cut at the deadline, its retry deferred
      // to the store and run (attempt 2) by whichever process takes it. Spread over the subjects: the
      // slow runs of one subject would run one after the other (a handler sees a subject in order).
      const { ids, sequenceOf } = appendEffectEvents(emulator, EVENTS, (i) => (i % 149 === 7 ? { slowMs: VISIBILITY_SECONDS * 2_000 } : {}));

      await waitFor(
        'both replicas recording effects',
        () => {
          const seen = readEffects(effects);
          return seen.length >= 600 && seen.some((e) => e.pid === a.child.pid) && seen.some((e) => e.pid === b.child.pid);
        },
        60_000,
      );
      a.kill('SIGKILL');
      // The leases the killed replica held, read before the emulator serves anything else: only their
      // events can run again. An ack is sent only once the lease's done marks are stored.
      const killedLeases = consumerState(emulator, destination)
        .leases.filter((lease) => lease.workerId?.startsWith('replica-a-') === true)
        .map((lease) => ({ first: BigInt(lease.firstSequence), last: BigInt(lease.lastSequence) }));
      expect((await a.exited).signal).toBe('SIGKILL');
      expect(readEffects(effects).length).toBeLessThan(EVENTS);
      // Hold the survivor (409 paused; it still acks what it holds) until the replacement is up and
      // the killed replica's leases have expired, so both survivors share the rest, including the
      // killed replica's batches (redelivered to whichever process pulls them).
      await client.pause(destination);
      const replacement = start('replica-c');
      await waitReady(replacement);
      await waitFor("the killed replica's leases to expire", () => consumerState(emulator, destination).leased === 0, 30_000);
      await client.resume(destination);

      // The cursor at the head, and no run left deferred in the store (the slow events' retries).
      await untilSettled(emulator, destination, { idempotencyUrl: store.url as string, idempotencyPrefix }, 90_000);
      b.kill('SIGTERM');
      replacement.kill('SIGTERM');
      const [bEnd, replacementEnd] = await Promise.all([b.exited, replacement.exited]);
      expect(bEnd.code, bEnd.stderr).toBe(0);
      expect(replacementEnd.code, replacementEnd.stderr).toBe(0);

      const all = readEffects(effects);
      const summary = summarize(all, ids);
      expect(summary.missing).toEqual([]);
      // Extra effects come only from the kill: the killed replica wrote the effect, its done mark
      // never reached the store, and a survivor ran the event again. That is a run that had started,
      // or one that had ended with its mark still on its way (a chained run starts in its thread
      // before the main thread has stored the previous run's mark): not bounded by the busy slots,
      // but always an event of a lease the killed replica held and had not acked.
      for (const [eventId, pids] of summary.duplicated) {
        expect({ eventId, first: pids[0], count: pids.length }).toEqual({ eventId, first: a.child.pid, count: 2 });
        expect([b.child.pid, replacement.child.pid]).toContain(pids[1]);
        const sequence = sequenceOf.get(eventId) as bigint;
        expect(
          killedLeases.some((lease) => sequence >= lease.first && sequence <= lease.last),
          `event ${eventId} (sequence ${sequence}) ran twice but was in no lease of the killed replica`,
        ).toBe(true);
      }
      // Both survivors shared the rest of the work.
      const afterKill = new Set(all.filter((e) => e.pid !== a.child.pid).map((e) => e.pid));
      expect(afterKill.size).toBe(2);
      expect(all.length).toBe(EVENTS + summary.extraEffects);
    }, 240_000);
  });
}
