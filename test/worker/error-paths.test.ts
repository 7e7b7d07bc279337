import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createIdempotencyStore, type IdempotencyStore } from '../../src/idempotency/index.js';
import { startWorker } from '../../src/worker/start.js';
import type { RunningWorker } from '../../src/worker/running-worker.js';
import { underCi } from '../fixtures/ci.js';
import { startPlatformProxy, type PlatformProxy } from '../fixtures/platform-proxy.js';
import { scrape, sample } from '../fixtures/scrape.js';
import { privateRedisUnavailable, startPrivateRedis } from '../idempotency/private-servers.js';
import {
  appendBehave,
  capturingLogger,
  consumerState,
  createConsumer,
  deadLetters,
  emulatorForFile,
  FAST,
  records,
  silent,
  tempDir,
  untilCaughtUp,
  untilCommitted,
  waitFor,
  workerConfig,
} from './harness.js';

/**
 * The error paths, each over real HTTP against the emulator, asserted at the worker's edges: what the
 * t.emulator holds, what the handlers did (their effects file), what /metrics, the logs and the
 * dead-letter sink say. Nothing here depends on how the worker is built inside.
 */
const cleanups: (() => Promise<unknown>)[] = [];
// Registered first, so it runs after the workers are closed (after-hooks run in reverse).
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
const t = emulatorForFile();

async function sharedMemoryStore(): Promise<IdempotencyStore> {
  const store = await createIdempotencyStore('memory', { prefix: 'shared', doneTtlMs: 600_000 });
  cleanups.push(() => store.close());
  return store;
}

describe('a thread-isolated handler that ignores ctx.signal past its own timeoutMs', () => {
  for (const misbehave of ['ignore-signal', 'block'] as const) {
    it(`(${misbehave}) fails at its own timeout, far from the batch deadline; retried; the worker goes on`, async () => {
      const dir = tempDir(`stubborn-${misbehave}`);
      const record = join(dir, 'effects.log');
      const destination = await createConsumer(t.emulator);
      // A minute of misbehaviour on the first attempt; the handler's own timeoutMs is 300 ms.
      const [stubborn] = appendBehave(
        t.emulator,
        1,
        () => ({ misbehave, sleepMs: 60_000, record }),
        () => 'stubborn',
        'timeout.stubborn',
      );
      appendBehave(
        t.emulator,
        6,
        () => ({ record }),
        (i) => `other-${i}`,
      );
      // A 10-minute lease: its deadline is far beyond this test's timeout; only the handler's own timeout can end the run.
      const worker = await startWorker(workerConfig(t.emulator, destination, dir, { isolation: 'thread', visibilitySeconds: 600, concurrency: 4 }), {
        logger: silent,
        timings: FAST,
      });
      t.running.push(worker);
      const failures: { eventId: string; code?: string | undefined; message: string | undefined }[] = [];
      worker.events.on('run:done', (e) => e.outcome === 'failed' && failures.push({ eventId: e.event.id, code: e.error?.code, message: e.error?.message }));

      await untilCommitted(t.emulator, destination, 30_000);
      expect(failures).toEqual([{ eventId: stubborn?.id, code: 'DW_ERR_HANDLER_TIMEOUT', message: expect.stringMatching(/short-timeout/) }]);
      expect(failures[0]?.message).not.toContain('lease deadline');
      const effects = records(record);
      expect(effects.find((e) => e.eventId === stubborn?.id)?.attempt).toBe(2);
      expect(effects).toHaveLength(7);
      expect(deadLetters(join(dir, 'dead-letter.jsonl'))).toEqual([]);
    });
  }
});

describe('a stale ack (the platform ended the lease before the ack came)', () => {
  const cases = [
    { first: 'succeeds', then: 'the other worker waits for its claims and finds the effects done', outcomeOfB: 'duplicate', attempt: 1 },
    { first: 'fails', then: 'the other worker waits for its claims, which are released, and runs the events', outcomeOfB: 'ok', attempt: 2 },
  ] as const;
  for (const { first, then, outcomeOfB, attempt } of cases) {
    it(`is counted and logged as stale; the batch went to another worker; the first run ${first}: ${then}`, async () => {
      const dir = tempDir('stale');
      const record = join(dir, 'effects.log');
      const gateFile = join(dir, 'gate');
      const destination = await createConsumer(t.emulator);
      const store = await sharedMemoryStore();
      // Worker A asks for a 10 s lease; its platform grants 1 s (as a stopped process or a skewed server would see it).
      const proxy: PlatformProxy = await startPlatformProxy(t.emulator.url, {
        rewrite: (url) => void (url.pathname.endsWith('/pull') && url.searchParams.set('visibility', '1')),
      });
      cleanups.push(() => proxy.close());
      const a = capturingLogger('warn');
      // One workerId: A pulls nothing more while it holds the batch, so the redelivery goes to B.
      // A's own retry waits long enough for B to have taken the claims A's failures gave back.
      const workerA = await startWorker(
        workerConfig(t.emulator, destination, dir, {
          baseUrl: proxy.url,
          visibilitySeconds: 10,
          maxLeases: 1,
          retryBackoffMinMs: 3_000,
          retryBackoffMaxMs: 3_000,
        }),
        { logger: a.logger, store, timings: FAST },
      );
      t.running.push(workerA);
      const pulledByA: number[] = [];
      workerA.events.on('lease:pulled', (e) => pulledByA.push(e.events.length));
      const events = appendBehave(t.emulator, 4, () => ({ behaviour: 'gate', gateFile, failAfterGate: first === 'fails', onlyOnAttempt: 1, record }));
      await waitFor('worker A to hold the batch', () => pulledByA[0] === 4);

      // Worker B (same store, its own ids) pulls once A's lease has expired on the platform: a redelivery.
      const workerB = await startWorker(workerConfig(t.emulator, destination, dir, { visibilitySeconds: 10 }), { logger: silent, store, timings: FAST });
      t.running.push(workerB);
      const redelivered: number[] = [];
      workerB.events.on('lease:pulled', (e) => redelivered.push(e.generation));
      await waitFor('worker B to get the batch again', () => redelivered.length > 0);
      expect(redelivered[0]).toBe(2);
      // Now A's handlers end, and A acks a lease that is no longer its own.
      writeFileSync(gateFile, '');

      await untilCommitted(t.emulator, destination);
      await untilCaughtUp(workerB);
      await waitFor(
        "worker A's ack answered",
        async () => (sample(await scrape(workerA.metricsUrl), 'durable_worker_acks_total', { status: 'stale' }) ?? 0) > 0,
      );
      const textA = await scrape(workerA.metricsUrl);
      expect(sample(textA, 'durable_worker_acks_total', { status: 'stale' })).toBe(1);
      expect(sample(textA, 'durable_worker_acks_total', { status: 'committed' })).toBe(0);
      expect(sample(textA, 'durable_worker_acks_total', { status: 'requeued' })).toBe(0);
      expect(a.messages()).toContain('ack was stale: the lease expired and was handed out again (raise --visibility or lower --limit)');
      const textB = await scrape(workerB.metricsUrl);
      expect(sample(textB, 'durable_worker_events_total', { type: 'behave.test', outcome: outcomeOfB })).toBe(4);
      expect(sample(textB, 'durable_worker_acks_total', { status: 'committed' })).toBeGreaterThanOrEqual(1);
      // Every effect once: by A's first attempt, or by B's run of the redelivery.
      expect(
        records(record)
          .map((e) => [e.eventId, e.attempt])
          .sort(),
      ).toEqual(events.map((e) => [e.id, attempt]).sort());
      // The platform saw A's pulls with the visibility it granted.
      expect(proxy.requests.filter((r) => r.route === 'pull').every((r) => r.path.includes('visibility=1'))).toBe(true);
    });
  }
});

describe('a dead-letter sink that cannot write', () => {
  it('keeps the event: it is retried, never committed past, and dead-lettered once a sink works', async () => {
    const dir = tempDir('dlq-broken');
    const record = join(dir, 'effects.log');
    // The sink's folder is a regular file: no write can succeed (whatever the process's privileges).
    const notAFolder = join(dir, 'not-a-folder');
    writeFileSync(notAFolder, '');
    const destination = await createConsumer(t.emulator);
    const store = await sharedMemoryStore();
    const [poison] = appendBehave(
      t.emulator,
      1,
      () => ({ behaviour: 'fail' }),
      () => 'poison',
    );
    appendBehave(
      t.emulator,
      3,
      () => ({ record }),
      (i) => `good-${i}`,
    );
    const broken = capturingLogger('error');
    const config = workerConfig(t.emulator, destination, dir, { maxAttempts: 2, deadLetterUrl: `file:${join(notAFolder, 'dead-letter.jsonl')}` });
    const first = await startWorker(config, { logger: broken.logger, store, timings: FAST });
    t.running.push(first);
    const attempts: number[] = [];
    first.events.on('lease:pulled', (e) => attempts.push(e.deliveryAttempt));

    // Past --max-attempts the event would be dead-lettered: the sink fails, so its lease is requeued and it comes back.
    await waitFor(
      'two failed dead-letter writes',
      () => broken.messages().filter((m) => m === 'dead-letter sink failed: the event is retried instead').length >= 2,
    );
    expect(Math.max(...attempts)).toBeGreaterThanOrEqual(2);
    expect(consumerState(t.emulator, destination).committed).toBeNull();
    const text = await scrape(first.metricsUrl);
    expect(sample(text, 'durable_worker_events_total', { type: 'behave.test', outcome: 'dead_lettered' })).toBeUndefined();
    await first.close();
    expect(existsSync(join(notAFolder, 'dead-letter.jsonl'))).toBe(false);

    // The same consumer with a sink that works: the event is dead-lettered, the cursor moves on.
    const fixed = await startWorker({ ...config, deadLetterUrl: `file:${join(dir, 'dead-letter.jsonl')}` }, { logger: silent, store, timings: FAST });
    t.running.push(fixed);
    await untilCommitted(t.emulator, destination);
    expect(deadLetters(join(dir, 'dead-letter.jsonl')).map((d) => [d.event.id, d.reason])).toEqual([[poison?.id, 'max-attempts']]);
    expect(records(record)).toHaveLength(3);
  });
});

describe('an idempotency store that fails the claims of a whole batch', () => {
  // A Redis server of this test's own, stopped and started again: the shared one is left alone.
  const unavailable = privateRedisUnavailable();
  const runIt = unavailable === undefined || underCi();
  if (!runIt) console.warn(`[worker] store-failure test skipped: ${unavailable}`);

  it.runIf(runIt)('the batch is acked failed and comes back; no handler runs without its claim; once the store is back every effect runs once', async () => {
    const server = await startPrivateRedis((url) => (options) => createIdempotencyStore(url, options));
    cleanups.push(() => server.dispose());
    const store = await server.makeStore({ prefix: `claims-down-${Date.now()}`, doneTtlMs: 600_000 });
    cleanups.push(() => store.close());
    const dir = tempDir('claims-down');
    const record = join(dir, 'effects.log');
    const destination = await createConsumer(t.emulator);
    const { logger, messages } = capturingLogger('error');
    const worker = await startWorker(workerConfig(t.emulator, destination, dir), { logger, store, timings: FAST });
    t.running.push(worker);
    await server.stop();
    const events = appendBehave(
      t.emulator,
      5,
      () => ({ record }),
      (i) => `s-${i}`,
    );

    const claimFailed = 'idempotency store claim failed: the lease is requeued and the process backs off';
    await waitFor('two batches requeued for their claims', () => messages().filter((m) => m === claimFailed).length >= 2);
    expect(records(record)).toEqual([]);
    // The second requeue's ack follows its log line: wait for its answer to be counted.
    await waitFor(
      'two requeued acks counted',
      async () => (sample(await scrape(worker.metricsUrl), 'durable_worker_acks_total', { status: 'requeued' }) ?? 0) >= 2,
    );
    expect(consumerState(t.emulator, destination).committed).toBeNull();

    await server.start();
    await untilCommitted(t.emulator, destination, 30_000);
    const effects = records(record);
    expect(effects.map((e) => e.eventId).sort()).toEqual(events.map((e) => e.id).sort());
    // Requeued for the store, never run: no attempt was spent.
    expect(effects.every((e) => e.attempt === 1)).toBe(true);
  });
});
