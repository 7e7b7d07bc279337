import { describe, expect, it } from 'vitest';
import { poolSize } from '../../src/dispatch/thread-pool.js';

describe('poolSize', () => {
  it('leaves one core to the main thread, keeps two threads at least, and spreads the budget of events', () => {
    expect(poolSize(64, 8)).toEqual({ threads: 7, tasksPerThread: 10 });
    // Two threads even on one or two cores: one blocked thread must not stall every handler.
    expect(poolSize(64, 2)).toEqual({ threads: 2, tasksPerThread: 32 });
    expect(poolSize(4, 1)).toEqual({ threads: 2, tasksPerThread: 2 });
    expect(poolSize(1, 1)).toEqual({ threads: 1, tasksPerThread: 1 });
    // Never more threads than events that can run at once.
    expect(poolSize(2, 16)).toEqual({ threads: 2, tasksPerThread: 1 });
  });
});
