import { describe, expect, it } from 'vitest';
import { setUpHandlers, tearDownHandlers, type SetupFailure } from '../../src/handlers/life-cycle.js';
import { toLoadedHandler } from '../../src/handlers/loader.js';
import { defineBatchHandler, defineHandler } from '../../src/index.js';

const logger = () => ({ debug() {}, info() {}, warn() {}, error() {} });
const FAST = { firstMs: 1, maxMs: 4 };

describe('handler life cycle', () => {
  it('keeps what setup returned as resources, retries a failing setup with backoff, reporting each failure', async () => {
    let calls = 0;
    const handler = toLoadedHandler(
      'db/sync',
      'db/sync.ts',
      defineHandler({
        type: 'a.b',
        setup(ctx) {
          calls++;
          if (calls < 3) throw new Error(`connection refused (${ctx.handlerName})`);
          return { pool: 'open' };
        },
        handle() {},
      }),
    );
    const failures: SetupFailure[] = [];
    await setUpHandlers([handler], { logger, backoff: FAST, onFailure: (f) => failures.push(f) });
    expect(handler.resources).toEqual({ pool: 'open' });
    expect(failures.map((f) => [f.handler, f.attempt, f.retryInMs, (f.error as Error).message])).toEqual([
      ['db/sync', 1, 1, 'connection refused (db/sync)'],
      ['db/sync', 2, 2, 'connection refused (db/sync)'],
    ]);
    // Set up once: a second call does not run it again.
    await setUpHandlers([handler], { logger });
    expect(calls).toBe(3);
  });

  it('without retry, the first failure rejects naming the handler; an abort stops the retries', async () => {
    const failing = toLoadedHandler(
      'broken',
      'broken.ts',
      defineHandler({ type: 'a.b', setup: () => Promise.reject(new Error('no credentials')), handle() {} }),
    );
    await expect(setUpHandlers([failing], { logger, retry: false })).rejects.toThrow('setup of handler broken failed: no credentials');
    const controller = new AbortController();
    const stopping = setUpHandlers([failing], {
      logger,
      backoff: { firstMs: 60_000, maxMs: 60_000 },
      signal: controller.signal,
      onFailure: () => controller.abort(new Error('worker closed')),
    });
    await expect(stopping).rejects.toThrow('worker closed');
  });

  it('tears down in reverse order, once, only what was set up, with its resources', async () => {
    const order: string[] = [];
    const make = (name: string, withSetup: boolean) =>
      toLoadedHandler(
        name,
        `${name}.ts`,
        defineBatchHandler({
          type: 'a.b',
          ...(withSetup ? { setup: () => `${name}-resources` } : {}),
          teardown: (ctx) => void order.push(`${ctx.handlerName}:${String(ctx.resources)}`),
          handleBatch() {},
        }),
      );
    const first = make('first', true);
    const second = make('second', true);
    const plain = make('plain', false);
    await setUpHandlers([first], { logger });
    const failures = await tearDownHandlers([first, second, plain], { logger, timeoutMs: 1_000 });
    expect(failures).toEqual([]);
    // `second` never set up: not torn down; `plain` has no setup: its teardown runs.
    expect(order).toEqual(['plain:undefined', 'first:first-resources']);
    await tearDownHandlers([first, second, plain], { logger, timeoutMs: 1_000 });
    expect(order).toHaveLength(3);
  });

  it('a teardown that throws or hangs is reported; the hang is cut at the timeout with ctx.signal aborted', async () => {
    let signal: AbortSignal | undefined;
    const hangs = toLoadedHandler(
      'hangs',
      'hangs.ts',
      defineHandler({ type: 'a.b', teardown: (ctx) => new Promise(() => void (signal = ctx.signal)), handle() {} }),
    );
    const throws = toLoadedHandler(
      'throws',
      'throws.ts',
      defineHandler({
        type: 'a.b',
        teardown: () => {
          throw new Error('close failed');
        },
        handle() {},
      }),
    );
    const failures = await tearDownHandlers([hangs, throws], { logger, timeoutMs: 50 });
    expect(failures.map((f) => [f.handler, (f.error as Error).message])).toEqual([
      ['throws', 'close failed'],
      ['hangs', 'teardown did not finish within 50 ms'],
    ]);
    expect(signal?.aborted).toBe(true);
  });
});
