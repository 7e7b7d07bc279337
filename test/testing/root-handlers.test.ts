import { describe, expect, it } from 'vitest';
// The package itself (dist/, built by `npm test`): what a user's test imports.
import { createTestEvent, entryUpdatedData, runHandler, sourceEntry } from 'durable-worker/testing';

// A plain JS module (no declarations): imported by URL, as the loader does.
const { default: entryChanges } = (await import(new URL('../../handlers/entry-changes.js', import.meta.url).href)) as { default: unknown };

describe('handlers/entry-changes.js (the default handler of `durable-worker dev`)', () => {
  it('logs a new entry as created with every property as a change', async () => {
    const event = createTestEvent(
      'source_entry.updated',
      entryUpdatedData({ sourceId: 'demo-products', current: sourceEntry('product-1', { name: 'Kettle', price: 12.5 }) }),
    );
    const outcome = await runHandler(entryChanges, event, { handlerName: 'entry-changes' });
    expect(outcome.status).toBe('ok');
    expect(outcome.logs).toEqual([
      {
        level: 'info',
        msg: 'entry product-1 created',
        fields: expect.objectContaining({
          sourceId: 'demo-products',
          entry: 'product-1',
          changes: [
            { property: 'name', from: null, to: 'Kettle' },
            { property: 'price', from: null, to: 12.5 },
          ],
        }),
      },
    ]);
  });

  it('logs only the properties whose value changed', async () => {
    const event = createTestEvent(
      'source_entry.updated',
      entryUpdatedData({
        previous: sourceEntry('product-1', { name: 'Kettle', price: 12.5 }),
        current: sourceEntry('product-1', { name: 'Kettle', price: 9.5 }),
      }),
    );
    const outcome = await runHandler(entryChanges, event);
    expect(outcome.logs[0]?.msg).toBe('entry product-1 updated: 1 change(s)');
    expect(outcome.logs[0]?.fields.changes).toEqual([{ property: 'price', from: 12.5, to: 9.5 }]);
  });
});
