import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { MemoryIdempotencyStore } from '../../src/idempotency/memory.js';
import { createIdempotencyStore } from '../../src/idempotency/index.js';
import { storeContract } from './contract.js';

storeContract('memory', (options) => createIdempotencyStore('memory', options), { shared: false });

describe('memory store: clock and bounds', () => {
  function fakeClock(startMs = 1_000_000) {
    let nowMs = startMs;
    return { now: () => nowMs, advance: (ms: number) => void (nowMs += ms) };
  }

  it('expires claims and done marks exactly at their deadlines', async () => {
    const clock = fakeClock();
    const store = new MemoryIdempotencyStore({ doneTtlMs: 10_000, now: clock.now });
    expect((await store.claim(['h:claimed'], 'a', 1_000)).states).toEqual(['new']);
    await store.markDone(['h:done']);

    clock.advance(999);
    expect((await store.claim(['h:claimed', 'h:done'], 'b', 1_000)).states).toEqual(['busy', 'done']);
    clock.advance(1);
    expect((await store.claim(['h:claimed'], 'b', 1_000)).states).toEqual(['new']);
    clock.advance(10_000 - 1_000 - 1);
    expect((await store.claim(['h:done'], 'b', 1_000)).states).toEqual(['done']);
    clock.advance(1);
    expect((await store.claim(['h:done'], 'b', 1_000)).states).toEqual(['new']);
  });

  it('forgets the least recently used keys beyond maxEntries', async () => {
    const store = new MemoryIdempotencyStore({ doneTtlMs: 60_000, maxEntries: 3 });
    await store.markDone(['h:1', 'h:2', 'h:3']);
    // Touching h:1 makes h:2 the least recently used one.
    expect((await store.claim(['h:1'], 'a', 1_000)).states).toEqual(['done']);
    await store.markDone(['h:4']);
    expect(store.size).toBe(3);
    expect((await store.claim(['h:2'], 'a', 1_000)).states).toEqual(['new']); // evicted, then claimed (evicts h:3)
    expect((await store.claim(['h:1', 'h:4'], 'b', 1_000)).states).toEqual(['done', 'done']);
    expect(store.size).toBe(3);
  });

  it('skips the keys released or re-claimed before eviction reached them', async () => {
    const store = new MemoryIdempotencyStore({ doneTtlMs: 60_000, maxEntries: 2 });
    await store.markDone(['h:1', 'h:2', 'h:3']); // h:1 evicted
    expect((await store.claim(['h:1'], 'a', 1_000)).states).toEqual(['new']); // h:2 evicted
    await store.release(['h:1'], 'a');
    await store.markDone(['h:4']); // h:3 evicted: the store holds h:4 alone
    await store.release(['h:4'], 'a'); // a done mark: kept
    await store.markDone(['h:5', 'h:6']); // h:4 evicted, then nothing more
    expect(store.size).toBe(2);
    expect((await store.claim(['h:5', 'h:6'], 'b', 1_000)).states).toEqual(['done', 'done']);
    expect((await store.claim(['h:3', 'h:4'], 'b', 1_000)).states).toEqual(['new', 'new']);
  });

  it('evicts in recency order through any mix of claims, done marks, releases and expiries', async () => {
    // A reference model (an array, most recent last) against the store, over a seeded random run
    // that fills the store many times over, so the recency list is unlinked at its head, its tail
    // and its middle.
    const clock = fakeClock();
    const maxEntries = 50;
    const store = new MemoryIdempotencyStore({ doneTtlMs: 5_000, maxEntries, now: clock.now });
    type ModelEntry = { key: string; state: 'claimed' | 'done'; owner: string; expiresAtMs: number };
    let model: ModelEntry[] = [];
    let seed = 42;
    const random = (n: number) => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) % n;
    const find = (key: string) => model.find((e) => e.key === key);
    const drop = (key: string) => void (model = model.filter((e) => e.key !== key));
    const add = (entry: ModelEntry) => {
      model.push(entry);
      while (model.length > maxEntries) model.shift();
    };
    for (let step = 0; step < 4_000; step++) {
      const key = `h:${random(150)}`;
      const owner = random(2) === 0 ? 'a' : 'b';
      const nowMs = clock.now();
      const operation = random(10);
      if (operation < 5) {
        let expected: string;
        const entry = find(key);
        if (entry !== undefined && entry.expiresAtMs > nowMs) {
          drop(key);
          model.push(entry);
          if (entry.state === 'done') expected = 'done';
          else if (entry.owner !== owner) expected = 'busy';
          else {
            entry.expiresAtMs = nowMs + 1_000;
            expected = 'new';
          }
        } else {
          if (entry !== undefined) drop(key);
          add({ key, state: 'claimed', owner, expiresAtMs: nowMs + 1_000 });
          expected = 'new';
        }
        expect((await store.claim([key], owner, 1_000)).states, `step ${step}: claim ${key} by ${owner}`).toEqual([expected]);
      } else if (operation < 8) {
        await store.markDone([key]);
        const entry = find(key);
        if (entry === undefined) add({ key, state: 'done', owner: '', expiresAtMs: nowMs + 5_000 });
        else Object.assign(entry, { state: 'done', owner: '', expiresAtMs: nowMs + 5_000 });
      } else if (operation < 9) {
        await store.release([key], owner);
        const entry = find(key);
        if (entry?.state === 'claimed' && entry.owner === owner) drop(key);
      } else {
        clock.advance(random(400));
      }
      expect(store.size, `step ${step}`).toBe(model.length);
    }
  });

  it('keeps every store instance to itself', async () => {
    const options = { prefix: `test-${randomUUID()}`, doneTtlMs: 60_000 };
    const first = await createIdempotencyStore('memory', options);
    const second = await createIdempotencyStore('memory', options);
    await first.markDone(['h:1']);
    expect((await second.claim(['h:1'], 'a', 1_000)).states).toEqual(['new']);
  });
});
