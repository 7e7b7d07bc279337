import { describe, expect, it } from 'vitest';
import { WorkerIdPool } from '../../src/worker/worker-ids.js';

describe('WorkerIdPool', () => {
  it('hands out every id once, lowest first, before reusing the lowest free one', () => {
    const pool = new WorkerIdPool('w', 3);
    const first = pool.take(0)!;
    expect(first.id).toBe('w-0');
    pool.release(first);
    // w-0 is free again, but w-1 and w-2 were never pulled with: they go first (a restart's held leases).
    expect(pool.take(0)!.id).toBe('w-1');
    expect(pool.take(0)!.id).toBe('w-2');
    expect(pool.allPulled).toBe(true);
    expect(pool.take(0)!.id).toBe('w-0');
    expect(pool.take(0)).toBeUndefined();
    expect(pool.busy).toBe(3);
  });

  it('prefers the lowest free id once every id was pulled with', () => {
    const pool = new WorkerIdPool('w', 3);
    const [a, b, c] = [pool.take(0)!, pool.take(0)!, pool.take(0)!];
    pool.release(c);
    pool.release(a);
    expect(pool.take(0)).toBe(a);
    expect(pool.take(0)).toBe(c);
    pool.release(b);
    pool.release(b);
    expect(pool.busy).toBe(2);
  });

  it('skips an id that rests after a crash until its time has come', () => {
    const pool = new WorkerIdPool('w', 2);
    const a = pool.take(0)!;
    const b = pool.take(0)!;
    pool.release(a);
    pool.release(b);
    // Its first crash at 0 rests it 500..1,000 ms (half the base at least; full jitter below the base).
    const restMs = a.restAfterCrash(0);
    expect(restMs).toBeGreaterThanOrEqual(500);
    expect(restMs).toBeLessThanOrEqual(1_000);
    expect(a.crashes).toBe(1);
    expect(pool.take(restMs - 1)).toBe(b);
    expect(pool.take(restMs - 1)).toBeUndefined();
    expect(pool.take(restMs)).toBe(a);
  });
});
