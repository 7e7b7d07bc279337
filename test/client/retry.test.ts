import { afterEach, describe, expect, it, vi } from 'vitest';
import { ApiError, NetworkError } from '../../src/client/errors.js';
import { computeRetryDelayMs, resolveRetryPolicy, withRetry, type RetryPolicy } from '../../src/client/retry.js';

const policy: RetryPolicy = { maxAttempts: 4, baseDelayMs: 100, maxDelayMs: 1000, maxRetryAfterMs: 5000 };
const api = (status: number, retryAfterMs?: number) => new ApiError({ status, method: 'POST', path: '/sources/s', retryAfterMs });

describe('computeRetryDelayMs', () => {
  it('grows the jitter window exponentially up to maxDelayMs', () => {
    const top = () => 0.999999;
    expect(computeRetryDelayMs(1, policy, undefined, top)).toBe(99);
    expect(computeRetryDelayMs(2, policy, undefined, top)).toBe(199);
    expect(computeRetryDelayMs(3, policy, undefined, top)).toBe(399);
    expect(computeRetryDelayMs(4, policy, undefined, top)).toBe(799);
    expect(computeRetryDelayMs(5, policy, undefined, top)).toBe(999);
    expect(computeRetryDelayMs(500, policy, undefined, top)).toBe(999);
  });

  it('is full jitter: uniform from zero', () => {
    expect(computeRetryDelayMs(3, policy, undefined, () => 0)).toBe(0);
    expect(computeRetryDelayMs(3, policy, undefined, () => 0.5)).toBe(200);
  });

  it('never comes back sooner than Retry-After asked', () => {
    expect(computeRetryDelayMs(1, policy, 2000, () => 0.5)).toBe(2000);
    expect(computeRetryDelayMs(5, { baseDelayMs: 100, maxDelayMs: 10_000 }, 1000, () => 0.99)).toBe(1584);
  });

  it('stays within [0, window) for random draws', () => {
    for (let retry = 1; retry <= 12; retry++) {
      const delay = computeRetryDelayMs(retry, policy);
      expect(delay).toBeGreaterThanOrEqual(0);
      expect(delay).toBeLessThan(Math.min(1000, 100 * 2 ** (retry - 1)));
    }
  });
});

describe('resolveRetryPolicy', () => {
  it('fills defaults, turns false into one attempt and names bad fields', () => {
    expect(resolveRetryPolicy({ maxAttempts: 2 })).toMatchObject({ maxAttempts: 2, baseDelayMs: 200 });
    expect(resolveRetryPolicy(false).maxAttempts).toBe(1);
    expect(() => resolveRetryPolicy({ maxAttempts: 0 })).toThrow(/retry.maxAttempts/);
    expect(() => resolveRetryPolicy({ maxDelayMs: -1 })).toThrow(/retry.maxDelayMs/);
  });
});

describe('withRetry', () => {
  const recordSleeps = () => {
    const sleeps: number[] = [];
    return { sleeps, sleep: async (ms: number) => void sleeps.push(ms) };
  };

  it('retries 5xx and network errors, then returns the first success', async () => {
    const { sleeps, sleep } = recordSleeps();
    const failures = [api(503), new NetworkError({ method: 'GET', path: '/x', cause: new Error('reset') })];
    const fn = vi.fn(async (attempt: number) => {
      const failure = failures[attempt - 1];
      if (failure) throw failure;
      return 'done';
    });
    await expect(withRetry(fn, policy, undefined, { sleep, random: () => 0.5 })).resolves.toBe('done');
    expect(fn).toHaveBeenCalledTimes(3);
    expect(sleeps).toEqual([50, 100]);
  });

  it('honours Retry-After on 429', async () => {
    const { sleeps, sleep } = recordSleeps();
    let calls = 0;
    const result = await withRetry(
      async () => {
        if (++calls === 1) throw api(429, 3000);
        return calls;
      },
      policy,
      undefined,
      { sleep, random: () => 0 },
    );
    expect(result).toBe(2);
    expect(sleeps).toEqual([3000]);
  });

  it('surfaces a Retry-After longer than maxRetryAfterMs at once', async () => {
    const fn = vi.fn(async () => {
      throw api(429, 60_000);
    });
    await expect(withRetry(fn, policy, undefined, { sleep: async () => undefined })).rejects.toMatchObject({ retryAfterMs: 60_000 });
    expect(fn).toHaveBeenCalledTimes(1);
  });

  it('does not retry a 400', async () => {
    const fn = vi.fn(async () => {
      throw api(400);
    });
    await expect(withRetry(fn, policy, undefined, { sleep: async () => undefined })).rejects.toMatchObject({ status: 400 });
    expect(fn).toHaveBeenCalledTimes(1);
  });

  it('never repeats a success (a 202 is final)', async () => {
    const fn = vi.fn(async () => ({ status: 202 }));
    await expect(withRetry(fn, policy)).resolves.toEqual({ status: 202 });
    expect(fn).toHaveBeenCalledTimes(1);
  });

  it('gives up after maxAttempts and rethrows the last error unchanged', async () => {
    const last = api(500);
    let calls = 0;
    const fn = async () => {
      calls++;
      throw calls === policy.maxAttempts ? last : api(502);
    };
    await expect(withRetry(fn, policy, undefined, { sleep: async () => undefined })).rejects.toBe(last);
    expect(calls).toBe(4);
  });

  it('stops in the middle of a backoff sleep when the signal aborts', async () => {
    const controller = new AbortController();
    const fn = vi.fn(async () => {
      throw api(503);
    });
    const run = withRetry(fn, { ...policy, baseDelayMs: 60_000, maxDelayMs: 60_000 }, controller.signal, { random: () => 0.99 });
    await vi.waitFor(() => expect(fn).toHaveBeenCalledTimes(1));
    controller.abort();
    await expect(run).rejects.toMatchObject({ name: 'AbortError' });
    expect(fn).toHaveBeenCalledTimes(1);
  });

  it('does not start when the signal is already aborted', async () => {
    const fn = vi.fn(async () => 1);
    await expect(withRetry(fn, policy, AbortSignal.abort())).rejects.toMatchObject({ name: 'AbortError' });
    expect(fn).not.toHaveBeenCalled();
  });

  it('uses the retryable predicate it is given', async () => {
    const fn = vi.fn(async () => {
      throw api(408);
    });
    const notOn408 = (err: unknown) => (err as ApiError).status !== 408;
    await expect(withRetry(fn, policy, undefined, { retryable: notOn408 })).rejects.toMatchObject({ status: 408 });
    expect(fn).toHaveBeenCalledTimes(1);
  });
});

afterEach(() => {
  vi.useRealTimers();
});
