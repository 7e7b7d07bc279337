import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ConsumerApi } from '../../src/client/consumer-api.js';
import { createClient, type PlatformClient } from '../../src/client/index.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { createFakeClock, type FakeClock } from '../../src/testing/clock.js';
import { startWorker } from '../../src/worker/start.js';
import type { RunningWorker, StartWorkerOptions } from '../../src/worker/running-worker.js';
import { tokenFor } from '../emulator/helpers.js';
import { appendBehave, consumerState, createConsumer, records, silent, tempDir, untilCommitted, waitFor, workerConfig } from '../worker/harness.js';

/**
 * Backpressure: with the in-flight window full (429 with Retry-After) and with the consumer paused
 * (409) no ack is dropped, every event takes effect once and the cursor reaches the head; and the
 * process waits what the platform asks (Retry-After) or what the worker's own pause wait says before it
 * pulls again, once for the whole process however many pulls were on their way (issue 21: one back-off,
 * then a single pull probes). Waits are counted in pulls against a fake clock the worker waits on: no
 * wall-clock rate.
 */
let emulator: RunningEmulator;
let auth: Record<string, string>;
const running: RunningWorker[] = [];
const clients: PlatformClient[] = [];

beforeAll(async () => {
  emulator = await startEmulator({ port: 0 });
  auth = { authorization: `Bearer ${(await tokenFor(emulator.url)).body.access_token}` };
});
afterEach(async () => {
  emulator.faults.clear();
  await Promise.all(running.splice(0).map((w) => w.close()));
  await Promise.all(clients.splice(0).map((c) => c.close()));
});
afterAll(async () => {
  await emulator?.close();
});

interface Tally {
  /** Answers of the pulls, in the order the loops asked (`pending` until answered). */
  pulls: string[];
  acks: string[];
  /** Pull answers the controller has acted on (`pull:done`: it then waits, if it waits, in the same turn). */
  handled: number;
}

/** The real platform client, counting every pull when it is asked for, and every answer. */
function countingClient(t: Tally): ConsumerApi {
  const client = createClient({ baseUrl: emulator.url, tenant: 'dev-tenant', clientId: 'dev-client', clientSecret: 'dev-secret' });
  clients.push(client);
  return {
    ensureCredential: (signal) => client.ensureCredential(signal),
    async pull(id, params, signal) {
      const at = t.pulls.push('pending') - 1;
      try {
        const result = await client.pull(id, params, signal);
        t.pulls[at] = String(result.status);
        return result;
      } catch (err) {
        t.pulls[at] = 'error';
        throw err;
      }
    },
    async acknowledge(id, ack, signal) {
      try {
        const response = await client.acknowledge(id, ack, signal);
        t.acks.push(response.status);
        return response;
      } catch (err) {
        t.acks.push('error');
        throw err;
      }
    },
  };
}

async function start(config: Parameters<typeof startWorker>[0], options: StartWorkerOptions = {}): Promise<{ worker: RunningWorker; t: Tally }> {
  const t: Tally = { pulls: [], acks: [], handled: 0 };
  const worker = await startWorker(config, { logger: silent, client: countingClient(t), ...options });
  worker.events.on('pull:done', () => t.handled++);
  running.push(worker);
  return { worker, t };
}

async function post(destination: string, action: string, query = ''): Promise<number> {
  const res = await fetch(`${emulator.url}/v1/event-destinations/${destination}/${action}${query}`, { method: 'POST', headers: auth });
  await res.arrayBuffer();
  return res.status;
}

/**
 * `pulls` pulls were sent, and the controller acted on every answer: whatever it waits, it waits on
 * the clock now (the lease's timers share that clock, so its pending timers do not count waits).
 */
function asleep(t: Tally, pulls: number): () => boolean {
  return () => t.pulls.length === pulls && !t.pulls.includes('pending') && t.handled === pulls;
}

/** Moves the fake clock on while the rest of a test runs in real time. */
function keepTicking(clock: FakeClock): () => Promise<void> {
  let ticking = true;
  const done = (async () => {
    while (ticking) {
      await clock.advance(100);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  })();
  return async () => {
    ticking = false;
    await done;
  };
}

describe('backpressure', () => {
  it('in-flight window full (429): throttled pulls, then every event once with no ack lost', async () => {
    const dir = tempDir('bp-429');
    const record = join(dir, 'effects.log');
    const destination = await createConsumer(emulator, 'bp-429');
    appendBehave(
      emulator,
      1_200,
      () => ({ record }),
      (i) => `s-${i % 100}`,
    );
    // Other workers hold the whole window (spec: 1,000 leased events) for 4 s, never acking.
    for (let i = 0; i < 10; i++) expect(await post(destination, 'pull', `?limit=100&visibility=4&workerId=hog-${i}`)).toBe(200);
    // Not --exit-when-idle: the hogs' leases expire one after another (as far apart as their pulls
    // were, which load stretches), and a worker that drained the expired ones before the next expired
    // would be caught up (204, no lease held) and exit with events still to come.
    const { t } = await start(workerConfig(emulator, destination, dir, { workers: 2, limit: 100, visibilitySeconds: 10 }));
    await untilCommitted(emulator, destination, 45_000);
    expect(t.pulls.filter((s) => s === '429').length).toBeGreaterThanOrEqual(1);
    const lines = records(record);
    expect(new Set(lines.map((l) => l.eventId)).size).toBe(1_200);
    expect(lines.length).toBe(1_200);
    expect(t.acks.filter((s) => s === 'error' || s === 'stale')).toEqual([]);
    const state = consumerState(emulator, destination);
    expect(state.committed).toBe(state.head);
  }, 60_000);

  it('a 429 storm from 8 loops is one back-off: the process pulls again, once, when the Retry-After has passed, not before', async () => {
    const dir = tempDir('bp-retry-after');
    const destination = await createConsumer(emulator, 'bp-retry-after');
    const loops = 8;
    emulator.faults.set({ throttle: { rate: 1, burst: 10_000, retryAfterSeconds: 3 }, routes: ['pull'] });
    const clock = createFakeClock(Date.now());
    const { t } = await start(workerConfig(emulator, destination, dir, { workers: loops }), { clock });
    // The 8 loops' first pulls are on their way together; every one is throttled, and the process waits once.
    await waitFor('every first pull throttled, one wait', asleep(t, loops));
    for (let round = 1; round <= 3; round++) {
      await clock.advance(2_999);
      expect(t.pulls.length, `round ${round}: a pull before the Retry-After`).toBe(loops + round - 1);
      await clock.advance(1);
      // One pull probes; throttled again, it is one wait again (not one per loop).
      await waitFor(`round ${round}: one pull probed`, asleep(t, loops + round));
    }
    expect(new Set(t.pulls)).toEqual(new Set(['429']));
  });

  it('paused (409): the leases in hand are still acked, the process waits before asking again, resume finishes every event', async () => {
    const dir = tempDir('bp-409');
    const record = join(dir, 'effects.log');
    const gateFile = join(dir, 'gate');
    const destination = await createConsumer(emulator, 'bp-409');
    const leases = 2;
    appendBehave(
      emulator,
      300,
      () => ({ behaviour: 'gate', gateFile, onlyOnAttempt: 1, record }),
      (i) => `s-${i % 50}`,
    );
    const clock = createFakeClock(Date.now());
    // Two workerIds: the process holds two leases at most, as two pull loops did.
    const config = workerConfig(emulator, destination, dir, { workers: leases, maxLeases: leases, limit: 50, concurrency: 50, visibilitySeconds: 30 });
    const { worker, t } = await start(config, { clock });
    await waitFor('both leases held', () => consumerState(emulator, destination).leased === 100);
    // Paused while the leases are being handled: their acks come after the pause and still count.
    expect(await post(destination, 'pause')).toBe(200);
    writeFileSync(gateFile, '');
    await waitFor('the leases in hand acked while paused', () => t.acks.length === leases);
    expect(t.acks).toEqual(['committed', 'committed']);
    expect(consumerState(emulator, destination)).toMatchObject({ paused: true, leased: 0 });

    // The worker's wait while paused: 2 s, jittered down to no less than half of it, once for the process.
    await waitFor(
      'told it is paused, waiting once',
      () => !t.pulls.includes('pending') && t.pulls.slice(leases).includes('409') && t.handled === t.pulls.length,
    );
    expect(new Set(t.pulls.slice(leases))).toEqual(new Set(['409']));
    for (let round = 1; round <= 3; round++) {
      const before = t.pulls.length;
      await clock.advance(999);
      expect(t.pulls.length, `round ${round}: a pull before half the pause wait`).toBe(before);
      await clock.advance(1_001);
      await waitFor(`round ${round}: one pull asked again`, asleep(t, before + 1));
    }

    expect(await post(destination, 'resume')).toBe(200);
    const stopTicking = keepTicking(clock);
    try {
      await untilCommitted(emulator, destination, 30_000);
    } finally {
      await stopTicking();
    }
    const lines = records(record);
    expect(new Set(lines.map((l) => l.eventId)).size).toBe(300);
    expect(lines.length).toBe(300);
    expect(t.acks.filter((s) => s !== 'committed')).toEqual([]);
    expect(worker.ready).toBe(true);
  }, 60_000);
});
