import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createFakeClock, createTestEvent, entryUpdatedData, runHandler, sourceEntry, withEmulator } from 'durable-worker/testing';
import { defineHandler } from 'durable-worker';
import product from './handlers/product.js';

const HANDLERS = fileURLToPath(new URL('./handlers', import.meta.url));

/** A `source_entry.updated` event for product `id`, from plain values before/after. */
function productEvent(id: string, current: Parameters<typeof sourceEntry>[1], previous?: Parameters<typeof sourceEntry>[1]) {
  return createTestEvent(
    'source_entry.updated',
    entryUpdatedData({ sourceId: 'products', current: sourceEntry(id, current), previous: previous === undefined ? null : sourceEntry(id, previous) }),
  );
}

describe('examples/typescript-handlers: unit tests with runHandler', () => {
  it('logs a price drop, with the data parsed by the zod schema', async () => {
    const outcome = await runHandler(product, productEvent('p-1', { name: 'Kettle', price: 15 }, { name: 'Kettle', price: 20 }), { handlerName: 'product' });
    expect(outcome.status).toBe('ok');
    expect(outcome.logs).toEqual([
      { level: 'info', msg: 'price drop on Kettle', fields: expect.objectContaining({ entryId: 'p-1', before: 20, after: 15, dropPercent: 25 }) },
    ]);
  });

  it('a price rise or a new product logs nothing', async () => {
    expect((await runHandler(product, productEvent('p-1', { name: 'Kettle', price: 25 }, { name: 'Kettle', price: 20 }))).logs).toEqual([]);
    expect((await runHandler(product, productEvent('p-2', { name: 'Mug', price: 4 }))).logs).toEqual([]);
  });

  it('an entry that is not a product is dead-lettered at once, naming the field', async () => {
    const outcome = await runHandler(product, productEvent('p-3', { name: 'Spoon' }), { handlerName: 'product' });
    expect(outcome).toMatchObject({ status: 'dead_lettered', reason: 'permanent' });
    if (outcome.status !== 'dead_lettered') return;
    expect(outcome.error.message).toMatch(/does not match the data schema of handler product: data\.current\.properties\.price: /);
  });

  it('a fake clock tests deadlines without waiting: ctx.signal aborts at the simulated lease end', async () => {
    // A handler that waits on a slow dependency, passing ctx.signal as every I/O call should.
    const slow = defineHandler({
      type: 'source_entry.updated',
      handle: (_event, ctx) => new Promise((_resolve, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason as Error))),
    });
    const clock = createFakeClock();
    const running = runHandler(slow, productEvent('p-1', { name: 'Kettle', price: 1.5 }), { clock, leaseMs: 60_000 });
    await clock.advance(60_000);
    expect(await running).toMatchObject({ status: 'failed', error: { code: 'DW_ERR_HANDLER_TIMEOUT' } });
  });
});

describe('examples/typescript-handlers: integration with withEmulator', () => {
  it('every matching handler runs; only the schema handler dead-letters a non-product', async () => {
    // thread isolation, as in production: the .ts handlers are compiled by tsx inside the threads.
    await withEmulator({ handlers: HANDLERS, worker: { isolation: 'thread' } }, async (env) => {
      await env.ingest('products', [
        {
          id: 'p-1',
          properties: [
            { id: 'name', value: 'Kettle' },
            { id: 'price', value: 19.5 },
          ],
        },
        { id: 'p-2', properties: [{ id: 'name', value: 'Spoon' }] },
      ]);
      const settled = await env.waitForSettled(4);
      const outcomes = settled.map((o) => `${o.event.subject} ${o.handler} ${o.outcome}`).sort();
      expect(outcomes).toEqual(['p-1 audit ok', 'p-1 product ok', 'p-2 audit ok', 'p-2 product dead_lettered']);
      expect(env.deadLetters).toEqual([
        expect.objectContaining({ handler: 'product', reason: 'permanent', error: expect.objectContaining({ code: 'DW_ERR_PERMANENT' }) }),
      ]);
    });
  });
});
