import { join } from 'node:path';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerDeadLetterGauge } from '../../src/dead-letter/gauge.js';
import type { DeadLetterCount } from '../../src/dead-letter/store.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { startWorker } from '../../src/worker/start.js';
import { appendBehave, createConsumer, FAST, silent, tempDir, waitFor, workerConfig } from '../worker/harness.js';

function gaugeWith(count: (() => Promise<DeadLetterCount[]>) | undefined, onError: (err: unknown) => void = () => {}, cacheMs = 5_000) {
  const registry = new Registry();
  let now = 1_000_000;
  registerDeadLetterGauge([registry], { count, onError, cacheMs, now: () => now });
  return { scrape: () => registry.metrics(), advance: (ms: number) => void (now += ms) };
}

describe('durable_worker_dead_letters', () => {
  it('is read from the sink at scrape time, one count per cache period, shared by concurrent scrapes', async () => {
    let counts: DeadLetterCount[] = [
      { handler: 'orders/created', reason: 'max-attempts', count: 3 },
      { handler: 'audit', reason: 'permanent', count: 1 },
    ];
    let calls = 0;
    const gauge = gaugeWith(async () => {
      calls += 1;
      return counts;
    });
    const [first, second] = await Promise.all([gauge.scrape(), gauge.scrape()]);
    expect(calls).toBe(1);
    expect(first).toContain('durable_worker_dead_letters{handler="orders/created",reason="max-attempts"} 3');
    expect(first).toContain('durable_worker_dead_letters{handler="audit",reason="permanent"} 1');
    expect(second).toBe(first);

    // Replayed meanwhile: the cached value serves until the period ends, then the drop shows as 0.
    counts = [{ handler: 'orders/created', reason: 'max-attempts', count: 1 }];
    await gauge.scrape();
    expect(calls).toBe(1);
    gauge.advance(5_000);
    const after = await gauge.scrape();
    expect(calls).toBe(2);
    expect(after).toContain('durable_worker_dead_letters{handler="orders/created",reason="max-attempts"} 1');
    expect(after).toContain('durable_worker_dead_letters{handler="audit",reason="permanent"} 0');
  });

  it('a failed count keeps the scrape answering with the last values, and is reported', async () => {
    let fail = false;
    const errors: unknown[] = [];
    const gauge = gaugeWith(
      async () => {
        if (fail) throw new Error('sink down');
        return [{ handler: 'h', reason: 'permanent', count: 2 }];
      },
      (err) => errors.push(err),
      0,
    );
    await gauge.scrape();
    fail = true;
    expect(await gauge.scrape()).toContain('durable_worker_dead_letters{handler="h",reason="permanent"} 2');
    expect(errors).toHaveLength(1);
  });

  it('without a count (a file sink) it is declared with no series', async () => {
    const text = await gaugeWith(undefined).scrape();
    expect(text).toContain('# TYPE durable_worker_dead_letters gauge');
    expect(text).not.toMatch(/^durable_worker_dead_letters\{/m);
  });
});

describe('a worker with a SQLite sink', () => {
  let emulator: RunningEmulator;
  beforeAll(async () => {
    emulator = await startEmulator({ port: 0, logger: silent });
  });
  afterAll(async () => {
    await emulator?.close();
  });

  it('serves the dead records of its prefix per handler and reason on /metrics', async () => {
    const dir = tempDir('dead-letter-gauge');
    const destination = await createConsumer(emulator);
    appendBehave(emulator, 2, () => ({ behaviour: 'permanent' }));
    appendBehave(
      emulator,
      1,
      () => ({ behaviour: 'fail' }),
      () => 'failing',
    );
    const config = workerConfig(emulator, destination, dir, { deadLetterUrl: `sqlite:${join(dir, 'dead-letters.sqlite')}`, maxAttempts: 1 });
    const worker = await startWorker(config, { logger: silent, timings: FAST });
    try {
      const text = await waitFor(
        'the dead letters on /metrics',
        async () => {
          const body = await fetch(`${worker.metricsUrl}/metrics`).then((r) => r.text());
          return /durable_worker_dead_letters\{handler="behave",reason="permanent"\} 2/.test(body) && /reason="max-attempts"\} 1/.test(body) ? body : undefined;
        },
        20_000,
        200,
      );
      expect(text).toContain('# TYPE durable_worker_dead_letters gauge');
    } finally {
      await worker.close();
    }
  });
});
