import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { waitUntil } from '../../src/runtime/wait-until.js';

describe('waitUntil', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('resolves when the promise does, and leaves no timer behind', async () => {
    let resolve: () => void = () => {};
    const waited = waitUntil(new Promise<void>((r) => (resolve = r)), 60_000);
    expect(vi.getTimerCount()).toBe(1);
    resolve();
    await expect(waited).resolves.toBeUndefined();
    expect(vi.getTimerCount()).toBe(0);
  });

  it('resolves when the time is up while the promise is still pending', async () => {
    let settled = false;
    const waited = waitUntil(new Promise(() => {}), 2_000).then(() => (settled = true));
    await vi.advanceTimersByTimeAsync(1_999);
    expect(settled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await waited;
    expect(settled).toBe(true);
  });

  it('rejects when the promise rejects first, and leaves no timer behind', async () => {
    await expect(waitUntil(Promise.reject(new Error('store down')), 60_000)).rejects.toThrow('store down');
    expect(vi.getTimerCount()).toBe(0);
  });
});
