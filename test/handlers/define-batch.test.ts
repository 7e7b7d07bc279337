import { describe, expect, expectTypeOf, it } from 'vitest';
import * as z from 'zod';
import { normalizeBatchResults } from '../../src/handlers/batch-results.js';
import { toLoadedHandler } from '../../src/handlers/loader.js';
import { defineBatchHandler, defineHandler, EventDataError, PermanentError, type BatchContext, type SourceEntryUpdatedEvent } from '../../src/index.js';
import { createTestEvent } from '../../src/testing/index.js';
import type { CloudEvent } from '../../src/types.js';

const ctx = { handlerName: 'orders/bulk' } as BatchContext<never>;

describe('defineBatchHandler', () => {
  it('validates its shape with messages naming the field', () => {
    expect(() => defineBatchHandler({ type: '', handleBatch() {} })).toThrow(/`type` must be a non-empty string/);
    expect(() => defineBatchHandler({ type: 'a.b' } as never)).toThrow(/`handleBatch` must be a function/);
    expect(() => defineBatchHandler({ type: 'a.b', maxBatchSize: 0, handleBatch() {} })).toThrow(/`maxBatchSize` must be a positive integer \(got 0\)/);
    expect(() => defineBatchHandler({ type: 'a.b', maxBatchSize: 2.5, handleBatch() {} })).toThrow(/got 2.5/);
    expect(() => defineBatchHandler({ type: 'a.b', setup: 'x', handleBatch() {} } as never)).toThrow(/`setup` must be a function/);
    expect(() => defineHandler({ type: 'a.b', teardown: 1, handle() {} } as never)).toThrow(/`teardown` must be a function/);
  });

  it('loads as a batch handler with its bound and life cycle', () => {
    const setup = () => ({ pool: 1 });
    const loaded = toLoadedHandler('bulk', 'bulk.ts', defineBatchHandler({ type: 'a.*', maxBatchSize: 50, setup, handleBatch() {} }));
    expect(loaded.handle).toBeUndefined();
    expect(loaded.batch?.maxBatchSize).toBe(50);
    expect(typeof loaded.batch?.handleBatch).toBe('function');
    expect(loaded.setup).toBe(setup);
    expect(() =>
      toLoadedHandler(
        'both',
        'both.ts',
        Object.assign(defineBatchHandler({ type: 'a.b', handleBatch() {} }), {}) && { ...defineBatchHandler({ type: 'a.b', handleBatch() {} }), handle() {} },
      ),
    ).toThrow(/either `handle`.*or `handleBatch`/);
  });

  it('with a schema: a mismatching event gets an EventDataError at its place and is left out of the call', async () => {
    const seen: unknown[] = [];
    const handler = defineBatchHandler({
      type: 'order.created',
      schema: z.object({ total: z.coerce.number() }),
      handleBatch(events) {
        seen.push(...events.map((e) => e.data));
        return events.map((e) => (e.data.total > 100 ? new PermanentError('too big') : undefined));
      },
    });
    const events = [
      createTestEvent('order.created', { total: '1' }),
      createTestEvent('order.created', { total: 'nope' }),
      createTestEvent('order.created', { total: 500 }),
    ];
    const results = (await handler.handleBatch(events as never, ctx)) as (Error | undefined)[];
    expect(seen).toEqual([{ total: 1 }, { total: 500 }]);
    expect(results[0]).toBeUndefined();
    expect(results[1]).toBeInstanceOf(EventDataError);
    expect(results[1]?.message).toMatch(/does not match the data schema of handler orders\/bulk: data.total/);
    expect(results[2]).toBeInstanceOf(PermanentError);
  });

  it('with a schema: a throw fails only the events the handler got; a wrong result length fails them with the reason', async () => {
    const throwing = defineBatchHandler({
      type: 'x.y',
      schema: z.object({ n: z.number() }),
      handleBatch() {
        throw new Error('db down');
      },
    });
    const events = [createTestEvent('x.y', { n: 1 }), createTestEvent('x.y', { n: 'bad' })];
    const thrown = (await throwing.handleBatch(events as never, ctx)) as (Error | undefined)[];
    expect(thrown.map((e) => e?.name)).toEqual(['Error', 'EventDataError']);
    expect(thrown[0]?.message).toBe('db down');
    const short = defineBatchHandler({ type: 'x.y', schema: z.object({ n: z.number() }), handleBatch: () => [] });
    const [first] = (await short.handleBatch([createTestEvent('x.y', { n: 1 })] as never, ctx)) as (Error | undefined)[];
    expect(first?.message).toMatch(/resolved with 0 results for 1 events/);
  });

  it('types data from `type`, resources from `setup`', () => {
    defineBatchHandler({
      type: 'source_entry.updated',
      setup: () => ({ rows: [] as string[] }),
      handleBatch(events, batchCtx) {
        expectTypeOf(events).toEqualTypeOf<SourceEntryUpdatedEvent[]>();
        expectTypeOf(batchCtx.resources.rows).toEqualTypeOf<string[]>();
      },
      teardown(teardownCtx) {
        expectTypeOf(teardownCtx.resources.rows).toEqualTypeOf<string[]>();
      },
    });
    defineHandler({
      type: 'job.*',
      async setup() {
        return { client: 'c' as const };
      },
      handle(event, handlerCtx) {
        expectTypeOf(event).toEqualTypeOf<CloudEvent<string, unknown>>();
        expectTypeOf(handlerCtx.resources).toEqualTypeOf<{ client: 'c' }>();
      },
    });
  });
});

describe('normalizeBatchResults', () => {
  it('nothing = all ok; an aligned array of undefined or errors', () => {
    expect(normalizeBatchResults(undefined, 2, 'h')).toEqual([undefined, undefined]);
    const err = new Error('x');
    expect(normalizeBatchResults([null, err], 2, 'h')).toEqual([undefined, err]);
    // An error from another realm (no Error prototype) still counts as an error.
    const foreign = { message: 'from elsewhere', code: 'E' };
    expect(normalizeBatchResults([foreign], 1, 'h')[0]).toBe(foreign);
  });

  it('refuses what it cannot align, naming the handler and the entry', () => {
    expect(() => normalizeBatchResults({}, 1, 'h')).toThrow(/handleBatch of h must resolve with nothing or an array of 1 results .*got object/);
    expect(() => normalizeBatchResults([undefined], 2, 'h')).toThrow(/resolved with 1 results for 2 events/);
    expect(() => normalizeBatchResults(['ok'], 1, 'h')).toThrow(/result 0 must be undefined \(ok\) or an Error \(got string\)/);
  });
});
