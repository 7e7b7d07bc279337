import { describe, expect, it } from 'vitest';
import { LruTable } from '../../src/runtime/lru-table.js';

/** The table against a plain model (an array, least recently used first) over a seeded random run. */
function runAgainstModel(maxEntries: number, keySpace: number, steps: number, seed: number): void {
  const table = new LruTable(maxEntries);
  type Record = { key: string; state: number; owner: string; expiresAtMs: number };
  let model: Record[] = [];
  const random = (n: number) => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) % n;
  for (let step = 0; step < steps; step++) {
    const key = `h:${random(keySpace)}`;
    const at = model.findIndex((r) => r.key === key);
    const slot = table.lookup(key);
    const where = `max ${maxEntries}, step ${step}, key ${key}`;
    expect(slot >= 0, where).toBe(at >= 0);
    const operation = random(4);
    if (at < 0) {
      const record = { key, state: 1 + random(2), owner: `o${random(3)}`, expiresAtMs: step };
      table.add(key, record.state, record.owner, record.expiresAtMs);
      model.push(record);
      if (model.length > maxEntries) model.shift();
    } else {
      const record = model[at] as Record;
      expect([table.state(slot), table.owner(slot), table.expiresAtMs(slot)], where).toEqual([record.state, record.owner, record.expiresAtMs]);
      if (operation === 0) {
        table.remove(slot);
        model.splice(at, 1);
      } else if (operation === 1) {
        table.touch(slot);
        model.splice(at, 1);
        model.push(record);
      } else {
        Object.assign(record, { state: 2, owner: '', expiresAtMs: step });
        table.update(slot, 2, '', step);
      }
    }
    expect(table.size, where).toBe(model.length);
  }
  // Everything the model holds is found, and nothing else.
  for (let k = 0; k < keySpace; k++) expect(table.lookup(`h:${k}`) >= 0, `max ${maxEntries}, h:${k} at the end`).toBe(model.some((r) => r.key === `h:${k}`));
}

describe('LruTable', () => {
  it.each([
    [1, 4],
    [2, 8],
    [7, 30],
    [100, 300],
    [1_000, 2_500],
  ])('behaves as a least-recently-used list of %i records (keys from %i), through growth, compaction and wrap-around', (maxEntries, keySpace) => {
    runAgainstModel(maxEntries, keySpace, 20_000, 7 + maxEntries);
  });

  it('keeps every record through a ring full of touched records (holes) and a removed tail', () => {
    const table = new LruTable(3);
    for (const key of ['a', 'b', 'c']) {
      expect(table.lookup(key)).toBe(-1);
      table.add(key, 1, '', 0);
    }
    // Each touch leaves a hole; the ring (twice the bound) fills with them and is compacted.
    for (let i = 0; i < 50; i++) table.touch(table.lookup(['a', 'b', 'c'][i % 3] as string));
    table.remove(table.lookup('c')); // the most recent of the last round was 'b'; 'c' goes
    expect(table.lookup('d')).toBe(-1);
    table.add('d', 1, '', 0);
    expect(table.lookup('e')).toBe(-1);
    table.add('e', 1, '', 0); // evicts the least recently used: 'a' (touched at i = 48, before 'b')
    expect(['a', 'b', 'c', 'd', 'e'].map((key) => table.lookup(key) >= 0)).toEqual([false, true, false, true, true]);
    expect(table.size).toBe(3);
  });

  it('refuses an add that no lookup of that key prepared', () => {
    const table = new LruTable(3);
    expect(table.lookup('a')).toBe(-1);
    expect(() => table.add('b', 1, '', 0)).toThrow(/look the key up first/);
  });
});
