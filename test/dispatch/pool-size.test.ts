import { describe, expect, it } from 'vitest';
import { poolSize } from '../../src/dispatch/thread-pool.js';

describe('poolSize', () => {
  it('leaves one core to the main thread, keeps two threads at least, and never more than the budget of events', () => {
    expect(poolSize(64, 8)).toBe(7);
    // Two threads even on one or two cores: one blocked thread must not stall every handler.
    expect(poolSize(64, 2)).toBe(2);
    expect(poolSize(4, 1)).toBe(2);
    expect(poolSize(1, 1)).toBe(1);
    // Never more threads than events that can run at once.
    expect(poolSize(2, 16)).toBe(2);
  });
});
