import { describe, expect, it } from 'vitest';
import { validateTypedIngest } from '../../src/ingest/index.js';
import { ApplyQueue } from '../../src/emulator/sources/apply-queue.js';
import { entryReadShape } from '../../src/emulator/sources/read-shape.js';
import { SourceStore, configuredProperties, newPropertyRecord, registerInferred, upsertEntry } from '../../src/emulator/sources/store.js';

function planOf(body: unknown, configured = new Map()) {
  const result = validateTypedIngest(body, configured);
  if (!result.ok) throw new Error(JSON.stringify(result.errors));
  return result.plan;
}

describe('source store', () => {
  it('types pending registration take part in validation until the batch is applied', () => {
    const record = new SourceStore().create('t', 's');
    record.pending.set('flag', { type: 'Boolean', delimiter: null });
    const second = validateTypedIngest({ entries: [{ id: 'b', properties: [{ id: 'flag', value: 'yes' }] }] }, configuredProperties(record));
    expect(second.ok).toBe(false);
  });

  it('a registered type wins over a pending one, and registration keeps a type set meanwhile', () => {
    const record = new SourceStore().create('t', 's');
    record.properties.set('flag', newPropertyRecord('flag', 'Text'));
    record.pending.set('flag', { type: 'Boolean', delimiter: null });
    expect(configuredProperties(record).get('flag')?.type).toBe('Text');
    registerInferred(record, [{ id: 'flag', type: 'Boolean' }]);
    expect(record.properties.get('flag')?.type).toBe('Text');
    expect(record.pending.size).toBe(0);
  });

  it('upsert keys entries case-insensitively and keeps the first spelling', () => {
    const record = new SourceStore().create('t', 's');
    upsertEntry(record, planOf({ entries: [{ id: 'Sku-1', properties: [{ id: 'n', value: 1 }] }] }).entries[0]!, '2024-01-01T00:00:00.000Z');
    upsertEntry(record, planOf({ entries: [{ id: 'SKU-1', properties: [{ id: 'm', value: 2 }] }] }).entries[0]!, '2024-01-02T00:00:00.000Z');
    expect(record.entries.size).toBe(1);
    const stored = record.entries.get('sku-1')!;
    expect(stored.id).toBe('Sku-1');
    expect(stored.lastUpdated).toBe('2024-01-02T00:00:00.000Z');
    expect(stored.properties.get('n')?.lastUpdated).toBe('2024-01-01T00:00:00.000Z');
  });

  it('a value the current type cannot represent: raw string with type null in lenient shape, throws in strict', () => {
    const record = new SourceStore().create('t', 's');
    upsertEntry(record, planOf({ entries: [{ id: 'e', properties: [{ id: 'n', value: 'abc' }] }] }).entries[0]!, '2024-01-01T00:00:00.000Z');
    record.properties.set('n', newPropertyRecord('n', 'Integer'));
    expect(entryReadShape(record.entries.get('e')!, record.properties, false).properties[0]).toMatchObject({ value: 'abc', type: null });
    expect(() => entryReadShape(record.entries.get('e')!, record.properties, true)).toThrow(/incompatible with type Integer/);
  });

  it('source ids are exact per tenant', () => {
    const store = new SourceStore();
    store.create('t1', 'Products');
    expect(store.get('t1', 'products')).toBeUndefined();
    expect(store.get('t2', 'Products')).toBeUndefined();
    expect(store.get('t1', 'Products')?.source).toMatchObject({ status: 'Active', type: 'Generic', name: 'Products' });
  });
});

describe('apply queue', () => {
  it('applies jobs on a later turn, in order, and idle() resolves after the last', async () => {
    const applied: number[] = [];
    const queue = new ApplyQueue<number>(
      (n) => applied.push(n),
      (err) => {
        throw err;
      },
    );
    queue.push(1);
    queue.push(2);
    expect(applied).toEqual([]);
    await queue.idle();
    expect(applied).toEqual([1, 2]);
    await expect(queue.idle()).resolves.toBeUndefined();
  });

  it('a failing job is reported and does not stop the others', async () => {
    const errors: unknown[] = [];
    const applied: number[] = [];
    const queue = new ApplyQueue<number>(
      (n) => {
        if (n === 2) throw new Error('boom');
        applied.push(n);
      },
      (err) => errors.push(err),
    );
    [1, 2, 3].forEach((n) => queue.push(n));
    await queue.idle();
    expect(applied).toEqual([1, 3]);
    expect(errors).toHaveLength(1);
  });

  it('close drops pending jobs, releases idle waiters and refuses new jobs', async () => {
    const applied: number[] = [];
    const queue = new ApplyQueue<number>(
      (n) => applied.push(n),
      () => undefined,
    );
    queue.push(1);
    const idle = queue.idle();
    queue.close();
    queue.close();
    await idle;
    expect(applied).toEqual([]);
    expect(() => queue.push(2)).toThrow(/closed/);
  });
});
