import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ConsumerApi, PullResult } from '../../src/client/consumer-api.js';
import { createClient, type PlatformClient } from '../../src/client/index.js';
import { startWorker } from '../../src/worker/start.js';
import type { RunningWorker } from '../../src/worker/running-worker.js';
import { scrape, sample } from '../fixtures/scrape.js';
import {
  appendBehave,
  capturingLogger,
  createConsumer,
  emulatorForFile,
  FAST,
  records,
  tempDir,
  TENANT,
  untilCommitted,
  waitFor,
  workerConfig,
} from './harness.js';

/**
 * Handling a pull's answer that throws (a bug, not a platform error: those are answered where they
 * happen) rests that workerId and pulls again: `pull:crashed` is emitted (and its deprecated name
 * `loop:crashed`), the crash is logged naming the workerId, and the work goes on. The bug is injected
 * at the worker's edge: a platform client whose first pull answers a 200 without a lease.
 */
const clients: PlatformClient[] = [];
// Registered first, so it runs after the workers are closed (after-hooks run in reverse).
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
});
const t = emulatorForFile();

/** The real client, except that its first pull returns a malformed answer. */
function clientBrokenOnce(): ConsumerApi {
  const client = createClient({ baseUrl: t.emulator.url, tenant: TENANT, clientId: 'dev-client', clientSecret: 'dev-secret', scope: 'read:events' });
  clients.push(client);
  let broken = false;
  return {
    ensureCredential: (signal) => client.ensureCredential(signal),
    acknowledge: (id, ack, signal) => client.acknowledge(id, ack, signal),
    async pull(id, params, signal) {
      if (!broken) {
        broken = true;
        return { status: 200 } as unknown as PullResult;
      }
      return client.pull(id, params, signal);
    },
  };
}

describe('a crashed pull', () => {
  it('is restarted: pull:crashed (and loop:crashed) is emitted and logged, the same workerId pulls again and every event takes effect once', async () => {
    const dir = tempDir('crashed-pull');
    const record = join(dir, 'effects.log');
    const destination = await createConsumer(t.emulator);
    appendBehave(
      t.emulator,
      10,
      () => ({ record }),
      (i) => `s-${i % 3}`,
    );
    const { logger, lines } = capturingLogger('info');
    // One workerId and one lease at a time: no other workerId exists to take over the work, so every
    // effect below was pulled by the workerId that crashed, after its restart.
    const config = workerConfig(t.emulator, destination, dir, { workers: 1, maxLeases: 1 });
    const worker = await startWorker(config, { logger, client: clientBrokenOnce(), timings: FAST });
    t.running.push(worker);
    const crashes: { workerId: string; restartInMs: number }[] = [];
    const timeline: { what: 'crashed' | 'pulled'; workerId: string; eventCount: number }[] = [];
    worker.events.on('pull:done', (e) => timeline.push({ what: 'pulled', workerId: e.workerId, eventCount: e.eventCount }));
    worker.events.on('pull:crashed', (e) => {
      crashes.push({ workerId: e.workerId, restartInMs: e.restartInMs });
      timeline.push({ what: 'crashed', workerId: e.workerId, eventCount: 0 });
      // A broken listener of the crash report must not stop the restart either.
      throw new Error('a pull:crashed listener bug');
    });
    const deprecated: unknown[] = [];
    worker.events.on('loop:crashed', (e) => deprecated.push(e));

    await untilCommitted(t.emulator, destination);
    await waitFor('every effect', () => records(record).length >= 10);
    expect(records(record)).toHaveLength(10);
    expect(new Set(records(record).map((r) => r.eventId)).size).toBe(10);
    const crashedId = `${config.workerIdPrefix}-0`;
    expect(crashes.map((c) => c.workerId)).toEqual([crashedId]);
    expect(deprecated).toMatchObject([{ workerId: crashedId, restartInMs: crashes[0]?.restartInMs }]);
    // The restart, counted: after the crash the same workerId pulled again and got the events.
    expect(new Set(timeline.map((e) => e.workerId))).toEqual(new Set([crashedId]));
    const crashedAt = timeline.findIndex((e) => e.what === 'crashed');
    const pulledAfter = timeline.slice(crashedAt + 1).filter((e) => e.what === 'pulled');
    expect(pulledAfter.reduce((sum, e) => sum + e.eventCount, 0)).toBe(10);
    const crashLine = lines().find((l) => l.msg === `pulls of ${crashedId} crashed: restarting them`);
    expect(crashLine).toMatchObject({ level: 50, workerId: crashedId, crashes: 1, err: { type: 'TypeError' } });
    const text = await scrape(worker.metricsUrl);
    expect(sample(text, 'durable_worker_listener_errors_total', { event: 'pull:crashed' })).toBe(1);
    expect(worker.ready).toBe(true);
    await worker.close();
    expect(await worker.done).toEqual({ reason: 'closed' });
  });
});
