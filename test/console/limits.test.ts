/**
 * The console's Limits page's API over real HTTP, on a real worker (in-process emulator, a real
 * handler module declaring limits): the declared and current values, the runs waiting for a permit
 * and in flight, those deferred to the store for their limit, the throttles heard, and the worker
 * followed as `dev --watch` replaces it.
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { DevConsole } from '../../src/console/index.js';
import { chainOf, deferredRunsOf } from '../../src/idempotency/deferred.js';
import { createIdempotencyStore } from '../../src/idempotency/index.js';
import { startWorker } from '../../src/worker/start.js';
import { appendBehave, createConsumer, emulatorForFile, FAST, silent, tempDir, untilCommitted, waitFor, workerConfig } from '../worker/harness.js';
import { consoleOptions, type ConsoleStartOptions } from './console-options.js';

const LIMITED = fileURLToPath(new URL('../fixtures/console-limits-handlers', import.meta.url));
const UNLIMITED = fileURLToPath(new URL('../fixtures/console-handlers', import.meta.url));
const HOLD = Symbol.for('durable-worker.test.console-limits.hold');
const t = emulatorForFile();
const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function startConsole(overrides: Partial<ConsoleStartOptions> = {}): Promise<{ devConsole: DevConsole; limits: () => Promise<any> }> {
  const devConsole = new DevConsole({ maxEvents: 100 });
  cleanups.push(() => devConsole.close());
  const dir = tempDir('console-limits');
  const url = await devConsole.start(consoleOptions(t.emulator.url, `file:${join(dir, 'dead-letter.jsonl')}`, { cwd: dir, ...overrides }));
  return {
    devConsole,
    limits: async () => {
      const res = await request(`${url}/api/limits`);
      expect(res.statusCode).toBe(200);
      return res.body.json();
    },
  };
}

async function startWorkerOn(handlersDir: string, destination: string) {
  const worker = await startWorker(workerConfig(t.emulator, destination, tempDir('console-limits-worker'), { handlersDir }), {
    logger: silent,
    timings: FAST,
    healthServer: false,
  });
  t.running.push(worker);
  return worker;
}

describe("the Limits page's API", () => {
  it("shows a handler's declared limits and what they do now: runs waiting for a permit and in flight, throttles heard, the adaptive rate", async () => {
    const { devConsole, limits } = await startConsole();
    expect(await limits()).toMatchObject({ running: false, scope: null, handlers: [] });
    const destination = await createConsumer(t.emulator, 'console-limits');
    devConsole.attach(await startWorkerOn(LIMITED, destination));

    const first = await limits();
    expect(first).toMatchObject({ running: true, scope: 'process' });
    expect(first.handlers).toEqual([
      {
        handler: 'limited',
        declared: { rate: { max: 20, perMs: 1_000 }, concurrency: 2, adaptive: true },
        allowedPerSecond: 20,
        waiting: 0,
        deferred: null,
        inFlight: 0,
        throttles: 0,
      },
    ]);

    // Four runs that hold until the gate opens: two start (concurrency 2), two wait for a permit.
    let open: () => void = () => {};
    (globalThis as Record<symbol, unknown>)[HOLD] = new Promise<void>((resolve) => (open = resolve));
    cleanups.push(() => open());
    appendBehave(
      t.emulator,
      4,
      () => ({ hold: true }),
      (i) => `held-${i}`,
      'console.limited',
    );
    let seen: any;
    await waitFor('two runs in flight and two waiting for a permit', async () => {
      seen = (await limits()).handlers[0];
      return seen.inFlight === 2 && seen.waiting === 2;
    });
    expect(seen.throttles).toBe(0);
    open();
    await untilCommitted(t.emulator, destination);
    await waitFor('every permit given back', async () => (await limits()).handlers[0].inFlight === 0);
    expect((await limits()).handlers[0]).toMatchObject({ waiting: 0, inFlight: 0, throttles: 0, allowedPerSecond: 20 });

    // The downstream says "too many" once (RetryLaterError): counted, and the adaptive rate comes down by a fifth.
    appendBehave(
      t.emulator,
      1,
      () => ({ throttle: true }),
      () => 'throttled',
      'console.limited',
    );
    await untilCommitted(t.emulator, destination);
    expect((await limits()).handlers[0]).toMatchObject({ throttles: 1, allowedPerSecond: 16, inFlight: 0 });
  });

  it('counts the runs deferred to the store for their limit, apart from those deferred for other reasons', async () => {
    const destination = await createConsumer(t.emulator, 'console-limits-deferred');
    const dir = tempDir('console-limits-sqlite');
    const config = workerConfig(t.emulator, destination, dir, { handlersDir: LIMITED, idempotencyUrl: `sqlite:${join(dir, 'store.db')}` });
    // Runs a worker deferred earlier, due in an hour: two for the limit, one for its retry time.
    const store = await createIdempotencyStore(config.idempotencyUrl, { prefix: config.idempotencyPrefix, doneTtlMs: 600_000 });
    const laterMs = Date.now() + 3_600_000;
    const run = (id: string, sequence: string, reason: 'limit' | 'retry') => {
      const event = { specversion: '1.0', id, source: 'test', type: 'console.limited', subject: `s-${id}`, time: new Date().toISOString(), sequence, data: {} };
      return {
        key: `limited:${id}`,
        handler: 'limited',
        chain: chainOf('limited', event.subject),
        sequence,
        event: event as never,
        retryAtMs: laterMs,
        deferredAtMs: Date.now(),
        reason,
      };
    };
    await deferredRunsOf(store)!.defer([run('e-1', '1', 'limit'), run('e-2', '2', 'limit'), run('e-3', '3', 'retry')], 'owner');
    await store.close();

    const { devConsole, limits } = await startConsole({
      replay: { handlersDir: LIMITED, idempotencyUrl: config.idempotencyUrl },
      idempotencyPrefix: config.idempotencyPrefix,
    });
    const worker = await startWorker(config, { logger: silent, timings: FAST, healthServer: false });
    t.running.push(worker);
    devConsole.attach(worker);
    expect((await limits()).handlers[0]).toMatchObject({ handler: 'limited', waiting: 0, deferred: 2 });
  });

  it("follows the worker a reload starts: none while it is down, then the new one's handlers (none with limits: the empty state)", async () => {
    const { devConsole, limits } = await startConsole();
    const destination = await createConsumer(t.emulator, 'console-limits-reload');
    const limited = await startWorkerOn(LIMITED, destination);
    devConsole.attach(limited);
    expect((await limits()).handlers.map((h: { handler: string }) => h.handler)).toEqual(['limited']);

    await limited.close();
    await waitFor('the stopped worker no longer shown', async () => (await limits()).running === false);
    expect((await limits()).handlers).toEqual([]);

    devConsole.attach(await startWorkerOn(UNLIMITED, destination));
    expect(await limits()).toMatchObject({ running: true, scope: null, handlers: [] });
  });
});
