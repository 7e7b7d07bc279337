import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { defineBatchHandler, defineHandler, PermanentError } from '../../src/index.js';
import { createFakeClock, createTestEvent, runBatchHandler } from '../../src/testing/index.js';

const events = (count: number, type = 'job.run') => Array.from({ length: count }, (_, i) => createTestEvent(type, { n: i }));

describe('runBatchHandler', () => {
  it('one outcome per event from the per-event results, in calls split by maxBatchSize', async () => {
    const sizes: number[] = [];
    const handler = defineBatchHandler({
      type: 'job.*',
      maxBatchSize: 2,
      handleBatch(batch, ctx) {
        sizes.push(batch.length);
        ctx.log.info({ size: batch.length }, 'call');
        return batch.map((e) => {
          const n = (e.data as { n: number }).n;
          return n === 1 ? new Error('later') : n === 2 ? new PermanentError('never') : undefined;
        });
      },
    });
    const outcome = await runBatchHandler(handler, events(3), { handlerName: 'jobs' });
    expect(sizes).toEqual([2, 1]);
    expect(outcome.calls).toBe(2);
    expect(outcome.events).toEqual([
      { status: 'ok' },
      { status: 'failed', error: expect.objectContaining({ message: 'later' }) },
      { status: 'dead_lettered', reason: 'permanent', error: expect.objectContaining({ message: 'never', code: 'DW_ERR_PERMANENT' }) },
    ]);
    expect(outcome.logs.map((l) => [l.msg, l.fields.handler, l.fields.events])).toEqual([
      ['call', 'jobs', 2],
      ['call', 'jobs', 1],
    ]);
  });

  it('a throw fails every event of the call (dead-lettered on the last attempt); a misaligned result says why', async () => {
    const throwing = defineBatchHandler({ type: 'job.run', handleBatch: () => Promise.reject(new Error('db down')) });
    const failed = await runBatchHandler(throwing, events(2), { attempt: 5, maxAttempts: 5 });
    expect(failed.events.map((e) => e.status)).toEqual(['dead_lettered', 'dead_lettered']);
    const short = defineBatchHandler({ type: 'job.run', handleBatch: () => [undefined] });
    const [first] = (await runBatchHandler(short, events(2))).events;
    expect(first).toMatchObject({ status: 'failed', error: { message: expect.stringContaining('resolved with 1 results for 2 events') } });
  });

  it('a schema failure is dead-lettered alone; the deadline aborts the call on a fake clock', async () => {
    const checked = defineBatchHandler({ type: 'job.run', schema: z.object({ n: z.number().max(0) }), handleBatch() {} });
    expect((await runBatchHandler(checked, events(2))).events.map((e) => e.status)).toEqual(['ok', 'dead_lettered']);

    const clock = createFakeClock();
    const hanging = defineBatchHandler({
      type: 'job.run',
      handleBatch: (_batch, ctx) => new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason as Error))),
    });
    const running = runBatchHandler(hanging, events(2), { clock, leaseMs: 1_000 });
    await clock.advance(1_000);
    expect((await running).events).toEqual([
      { status: 'failed', error: expect.objectContaining({ code: 'DW_ERR_HANDLER_TIMEOUT' }) },
      { status: 'failed', error: expect.objectContaining({ code: 'DW_ERR_HANDLER_TIMEOUT' }) },
    ]);
  });

  it('runs setup before and teardown after, with ctx.resources; refuses a single-event handler and no events', async () => {
    const calls: string[] = [];
    const handler = defineBatchHandler({
      type: 'job.run',
      setup: () => ({ conn: 'c1' }),
      handleBatch: (_batch, ctx) => void calls.push(`batch ${ctx.resources.conn}`),
      teardown: (ctx) => void calls.push(`teardown ${ctx.resources.conn}`),
    });
    await runBatchHandler(handler, events(1));
    expect(calls).toEqual(['batch c1', 'teardown c1']);
    expect(() => runBatchHandler(defineHandler({ type: 'job.run', handle() {} }), events(1))).toThrow(/use runHandler/);
    expect(() => runBatchHandler(handler, [])).toThrow(/at least one event/);
    expect(() => runBatchHandler(handler, events(1, 'other.type'))).toThrow(/never receives an event of type other.type/);
  });
});
