/**
 * OrphanedClaims with the fake clock: claims whose answer was lost are given back when the store
 * answers a call, and every second meanwhile; a release that fails keeps them for the next try.
 */
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { MemoryIdempotencyStore } from '../../src/idempotency/memory.js';
import { createFakeClock } from '../../src/testing/clock.js';
import { OrphanedClaims } from '../../src/worker/orphaned-claims.js';

describe('OrphanedClaims', () => {
  it('gives lost claims back every second until a release goes through, then stops its timer', async () => {
    const clock = createFakeClock();
    const store = new MemoryIdempotencyStore({ doneTtlMs: 60_000, now: clock.now });
    let failing = 2;
    const release = store.release.bind(store);
    store.release = (keys, owner) => (failing-- > 0 ? Promise.reject(new Error('store down')) : release(keys, owner));
    await store.claim(['h:e1'], 'lost-owner', 60_000);
    let answered = 0;
    const orphans = new OrphanedClaims(store, pino({ level: 'silent' }), () => answered++, clock);
    orphans.add(['h:e1'], 'lost-owner');
    await clock.advance(999);
    expect(answered).toBe(0);
    await clock.advance(1);
    // First try failed: still held.
    expect((await store.claim(['h:e1'], 'next', 1_000)).states).toEqual(['busy']);
    await clock.advance(1_000);
    expect(answered).toBe(0);
    await clock.advance(1_000);
    expect(answered).toBe(1);
    expect((await store.claim(['h:e1'], 'next', 1_000)).states).toEqual(['new']);
    expect(clock.pendingTimers).toBe(0);
    orphans.close();
  });

  it('a call the store answers gives them back at once', async () => {
    const clock = createFakeClock();
    const store = new MemoryIdempotencyStore({ doneTtlMs: 60_000, now: clock.now });
    await store.claim(['h:e2'], 'lost-owner', 60_000);
    const orphans = new OrphanedClaims(store, pino({ level: 'silent' }), () => {}, clock);
    orphans.add(['h:e2'], 'lost-owner');
    orphans.giveBack();
    await clock.advance(0);
    expect((await store.claim(['h:e2'], 'next', 1_000)).states).toEqual(['new']);
    expect(clock.pendingTimers).toBe(0);
  });
});
