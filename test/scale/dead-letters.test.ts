import { randomUUID } from 'node:crypto';
import { copyFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { openDeadLetters } from '../../src/dead-letter-admin/api.js';
import { CliProcess, REPO_ROOT, runCli, waitReady } from '../cli/cli-process.js';
import { deleteDeadLetters } from '../dead-letter/cleanup.js';
import { createConsumer, tempDir, TENANT, untilSettled, waitFor } from '../worker/harness.js';
import { readEffects } from './effects.js';
import { underCi } from '../fixtures/ci.js';

/**
 * Issue 22, done-when: dead letters outlive a pod. Two `durable-worker run` processes share one
 * consumer and one PostgreSQL (then Redis) server, which by default also holds their dead letters.
 * Poison events fail on every attempt and are dead-lettered while one process is SIGKILLed and
 * replaced (a kill between a dead-letter write and its ack writes the record again on
 * redelivery). Every poison event must be listed exactly once; once the handler is fixed,
 * `dead-letters replay` runs each once and marks it replayed, and a second replay runs nothing.
 */
const STORES = [
  { name: 'postgres', variable: 'DATABASE_URL', url: process.env.DATABASE_URL },
  { name: 'redis', variable: 'REDIS_URL', url: process.env.REDIS_URL },
] as const;

describe('dead-letter replica test environment', () => {
  for (const store of STORES) {
    it.runIf(underCi())(`has ${store.variable} in CI`, () => {
      expect(store.url, `${store.variable} must be set in CI`).toBeTruthy();
    });
  }
});

const EVENTS = 1_200;
/** Every 15th event is poison: it fails on every attempt. */
const isPoison = (i: number) => i % 15 === 4;
const BROKEN = join(REPO_ROOT, 'test/fixtures/replay-handlers-broken/orders.mjs');
const FIXED = join(REPO_ROOT, 'test/fixtures/replay-handlers/orders.mjs');

let emulator: RunningEmulator;
const children: CliProcess[] = [];

beforeAll(async () => {
  emulator = await startEmulator({ port: 0 });
});
afterEach(() => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
});
afterAll(async () => {
  await emulator?.close();
});

for (const store of STORES) {
  describe.skipIf(store.url === undefined)(`dead letters of two replicas sharing ${store.name}`, () => {
    it('every poison event listed once after a SIGKILL mid-run; replay runs each once, then nothing', async () => {
      const url = store.url as string;
      const dir = tempDir(`dead-letter-replicas-${store.name}`);
      const handlers = join(dir, 'handlers');
      mkdirSync(handlers);
      copyFileSync(BROKEN, join(handlers, 'orders.mjs'));
      const effectsFile = join(dir, 'effects.log');
      const env = { DW_TEST_EFFECTS_FILE: effectsFile, DW_TEST_EFFECT_DELAY_MS: '20' };
      const destination = await createConsumer(emulator, `dead-letters-${store.name}`);
      const prefix = `dead-letters-${randomUUID()}`;
      // No --dead-letter: the sink follows the shared idempotency store.
      const shared = ['--idempotency', url, '--idempotency-prefix', prefix];
      const start = (workerIdPrefix: string) => {
        const child = new CliProcess(
          [
            'run',
            '--base-url',
            emulator.url,
            '--tenant',
            TENANT,
            '--client-id',
            'dev-client',
            '--client-secret',
            'dev-secret',
            '--destination',
            destination,
            '--handlers',
            handlers,
            '--metrics-port',
            '0',
            '--metrics-host',
            '127.0.0.1',
            '--workers',
            '2',
            '--limit',
            '10',
            '--concurrency',
            '4',
            '--visibility',
            '3',
            '--max-attempts',
            '2',
            '--shutdown-timeout',
            '1',
            '--isolation',
            'none',
            '--worker-id-prefix',
            workerIdPrefix,
            '--log-level',
            'info',
            '--idempotency-ttl',
            '10m',
            ...shared,
          ],
          { env },
        );
        children.push(child);
        return child;
      };
      const deadLetters = await openDeadLetters(url, { prefix });
      try {
        const a = start('replica-a');
        const b = start('replica-b');
        await Promise.all([waitReady(a), waitReady(b)]);
        const events = emulator.appendEvents(
          TENANT,
          Array.from({ length: EVENTS }, (_, i) => ({ type: 'orders.created', subject: `order-${i % 40}`, data: isPoison(i) ? { poison: true } : { n: i } })),
        );
        const poison = events.filter((_, i) => isPoison(i)).map((e) => e.id);
        const deadCount = async () => (await deadLetters.countDead()).reduce((sum, c) => sum + c.count, 0);

        // Kill one replica while poison events are being dead-lettered, mid-run.
        await waitFor('a few dead letters', async () => (await deadCount()) >= 3, 60_000);
        a.kill('SIGKILL');
        expect((await a.exited).signal).toBe('SIGKILL');
        // Mid-run: poison events still to dead-letter (the cursor may be at the head already: the
        // poison events' retries, and the later events of their subjects, wait as deferred runs).
        expect(await deadCount(), 'the run was over before the kill').toBeLessThan(poison.length);
        const replacement = start('replica-c');
        await waitReady(replacement);
        // The cursor at the head, and no run left deferred in the store (the poison events' retries).
        await untilSettled(emulator, destination, { idempotencyUrl: url, idempotencyPrefix: prefix }, 120_000);
        b.kill('SIGTERM');
        replacement.kill('SIGTERM');
        for (const end of await Promise.all([b.exited, replacement.exited])) expect(end.code, end.stderr).toBe(0);

        // Listed exactly once each, by the CLI, with the replicas' own options.
        const list = await runCli(['dead-letters', 'list', '--json', ...shared]);
        expect(list.code, list.stderr).toBe(0);
        const records = list.stdout
          .split('\n')
          .filter(Boolean)
          .map((line) => JSON.parse(line) as { id: string; state: string; event: { id: string } });
        expect(records.map((r) => r.id).sort()).toEqual(poison.map((id) => `orders:${id}`).sort());
        expect(records.every((r) => r.state === 'dead')).toBe(true);
        expect(readEffects(effectsFile).filter((e) => poison.includes(e.eventId))).toEqual([]);

        // The fix is deployed: the same handler name, new code.
        copyFileSync(FIXED, join(handlers, 'orders.mjs'));
        const replay = await runCli(['dead-letters', 'replay', '--handlers', handlers, ...shared], { env });
        expect(replay.code, replay.stdout + replay.stderr).toBe(0);
        expect(replay.stdout).toContain(`${poison.length} of ${poison.length} record(s): ${poison.length} replayed`);
        const runs = readEffects(effectsFile).filter((e) => poison.includes(e.eventId));
        expect(runs.map((e) => e.eventId).sort()).toEqual([...poison].sort());
        const states = new Set<string>();
        for await (const record of deadLetters.all()) states.add(record.state);
        expect([...states]).toEqual(['replayed']);
        expect(await deadCount()).toBe(0);

        const again = await runCli(['dead-letters', 'replay', '--handlers', handlers, ...shared], { env });
        expect(again.code, again.stderr).toBe(0);
        expect(again.stdout).toContain('nothing to replay');
        expect(readEffects(effectsFile).filter((e) => poison.includes(e.eventId))).toHaveLength(poison.length);
      } finally {
        await deadLetters.close();
        await deleteDeadLetters(url, [prefix]);
      }
    }, 300_000);
  });
}
