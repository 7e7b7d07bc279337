import { setTimeout as sleepMs } from 'node:timers/promises';
import { isAbortError, isRetryable } from './errors.js';

/**
 * Bounded exponential backoff with full jitter (spec, Errors: "retry with bounded exponential
 * backoff, honoring Retry-After when present"). The delay math is a pure function so it can be
 * tested without clocks; `withRetry` adds the abortable sleeping.
 */
export interface RetryPolicy {
  /** Attempts in total, the first included; 1 disables retrying. Default 4. */
  maxAttempts: number;
  /** Ceiling of the first backoff window, in ms; window n is `baseDelayMs * 2^(n-1)`. Default 200. */
  baseDelayMs: number;
  /** Largest backoff window, in ms. Default 10_000. */
  maxDelayMs: number;
  /**
   * Longest `Retry-After` we are willing to sleep inside one call, in ms. A longer one ends the
   * retries and surfaces the error (carrying `retryAfterMs`) so the caller decides. Default 60_000.
   */
  maxRetryAfterMs: number;
}

export const DEFAULT_RETRY_POLICY: Readonly<RetryPolicy> = Object.freeze({
  maxAttempts: 4,
  baseDelayMs: 200,
  maxDelayMs: 10_000,
  maxRetryAfterMs: 60_000,
});

/** Policy that never retries (the one pull and acknowledge use: the worker loop owns their backoff). */
export const NO_RETRY: Readonly<RetryPolicy> = Object.freeze({ ...DEFAULT_RETRY_POLICY, maxAttempts: 1 });

/** Fills a partial policy with defaults and rejects nonsense with a message naming the field. */
export function resolveRetryPolicy(partial: Partial<RetryPolicy> | false | undefined): RetryPolicy {
  if (partial === false) return { ...NO_RETRY };
  const policy = { ...DEFAULT_RETRY_POLICY, ...stripUndefined(partial ?? {}) };
  if (!Number.isInteger(policy.maxAttempts) || policy.maxAttempts < 1) {
    throw new RangeError(`retry.maxAttempts must be an integer >= 1 (got ${policy.maxAttempts})`);
  }
  for (const key of ['baseDelayMs', 'maxDelayMs', 'maxRetryAfterMs'] as const) {
    if (!Number.isFinite(policy[key]) || policy[key] < 0) {
      throw new RangeError(`retry.${key} must be a finite number >= 0 (got ${policy[key]})`);
    }
  }
  return policy;
}

/**
 * Delay before retry number `retry` (1 = the first retry), in ms: full jitter, i.e. uniform in
 * [0, min(maxDelayMs, baseDelayMs * 2^(retry-1))). A `Retry-After` from the server is a floor: we
 * never come back sooner than it asked (spec: honoring Retry-After, integer seconds, minimum 1).
 */
export function computeRetryDelayMs(
  retry: number,
  policy: Pick<RetryPolicy, 'baseDelayMs' | 'maxDelayMs'>,
  retryAfterMs?: number,
  random: () => number = Math.random,
): number {
  const exponent = Math.max(0, retry - 1);
  // 2^exponent overflows to Infinity for huge attempt numbers; Math.min keeps the window bounded.
  const windowMs = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** exponent);
  const jitteredMs = Math.floor(random() * windowMs);
  return retryAfterMs === undefined ? jitteredMs : Math.max(retryAfterMs, jitteredMs);
}

export interface WithRetryOptions {
  /** Which failures to repeat. Default `isRetryable` (429, 408, 5xx, network). */
  retryable?: (err: unknown) => boolean;
  /** Called before each sleep; for logs and metrics, never for control. */
  onRetry?: (info: { attempt: number; delayMs: number; err: unknown }) => void;
  /** Injected for tests. */
  random?: () => number;
  /** Injected for tests; must reject when `signal` aborts. */
  sleep?: (ms: number, signal: AbortSignal | undefined) => Promise<void>;
}

const defaultSleep = (ms: number, signal: AbortSignal | undefined): Promise<void> => sleepMs(ms, undefined, signal ? { signal } : undefined);

/**
 * Runs `fn` until it resolves, throws something not retryable, or `policy.maxAttempts` is used up;
 * the last error is rethrown unchanged. A resolved value is never repeated (spec: "Do not retry a
 * successful 202"). Abort ends the loop at once, also in the middle of a backoff sleep.
 */
export async function withRetry<T>(fn: (attempt: number) => Promise<T>, policy: RetryPolicy, signal?: AbortSignal, options: WithRetryOptions = {}): Promise<T> {
  const retryable = options.retryable ?? isRetryable;
  const sleep = options.sleep ?? defaultSleep;
  for (let attempt = 1; ; attempt++) {
    signal?.throwIfAborted();
    try {
      return await fn(attempt);
    } catch (err) {
      if (attempt >= policy.maxAttempts || isAbortError(err) || signal?.aborted || !retryable(err)) throw err;
      const serverAskedMs = readRetryAfterMs(err);
      if (serverAskedMs !== undefined && serverAskedMs > policy.maxRetryAfterMs) throw err;
      const delayMs = computeRetryDelayMs(attempt, policy, serverAskedMs, options.random);
      options.onRetry?.({ attempt, delayMs, err });
      await sleep(delayMs, signal);
    }
  }
}

function readRetryAfterMs(err: unknown): number | undefined {
  const value = typeof err === 'object' && err !== null ? (err as { retryAfterMs?: unknown }).retryAfterMs : undefined;
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
