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
    expect(await store.claim(['h:claimed'], 'a', 1_000)).toEqual(['new']);
    await store.markDone(['h:done']);

    clock.advance(999);
    expect(await store.claim(['h:claimed', 'h:done'], 'b', 1_000)).toEqual(['busy', 'done']);
    clock.advance(1);
    expect(await store.claim(['h:claimed'], 'b', 1_000)).toEqual(['new']);
    clock.advance(10_000 - 1_000 - 1);
    expect(await store.claim(['h:done'], 'b', 1_000)).toEqual(['done']);
    clock.advance(1);
    expect(await store.claim(['h:done'], 'b', 1_000)).toEqual(['new']);
  });

  it('forgets the least recently used keys beyond maxEntries', async () => {
    const store = new MemoryIdempotencyStore({ doneTtlMs: 60_000, maxEntries: 3 });
    await store.markDone(['h:1', 'h:2', 'h:3']);
    // Touching h:1 makes h:2 the least recently used one.
    expect(await store.claim(['h:1'], 'a', 1_000)).toEqual(['done']);
    await store.markDone(['h:4']);
    expect(store.size).toBe(3);
    expect(await store.claim(['h:2'], 'a', 1_000)).toEqual(['new']); // evicted, then claimed (evicts h:3)
    expect(await store.claim(['h:1', 'h:4'], 'b', 1_000)).toEqual(['done', 'done']);
    expect(store.size).toBe(3);
  });

  it('keeps every store instance to itself', async () => {
    const options = { prefix: `test-${randomUUID()}`, doneTtlMs: 60_000 };
    const first = await createIdempotencyStore('memory', options);
    const second = await createIdempotencyStore('memory', options);
    await first.markDone(['h:1']);
    expect(await second.claim(['h:1'], 'a', 1_000)).toEqual(['new']);
  });
});
