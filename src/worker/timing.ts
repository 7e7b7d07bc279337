import { HandlerTimeoutError } from '../errors.js';

/**
 * Safety margin between the lease deadline (when the worker stops its runs) and the lease's expiry: time to abort handlers, write done
 * marks and get the `failed` ack to the server before the lease expires (spec: an expired lease is
 * redelivered with a higher generation and a late ack is `stale`). 10 % of the lease, at least 1 s,
 * but never more than half the lease (a 1 s lease still gets 500 ms of work).
 */
export function safetyMarginMs(visibilityMs: number): number {
  return Math.min(visibilityMs / 2, Math.max(1_000, visibilityMs * 0.1));
}

/** Why a lease stopped at its deadline: runs cut by it fail as too slow (run-handler.ts). */
export function leaseDeadline(): Error {
  return new HandlerTimeoutError('lease deadline');
}

/** How long after its deadline a lease still waits for its runs to report before acking failed. */
export const STRAGGLER_GRACE_MS = 250;

/** Full jitter (AWS architecture blog): uniform in [0, min(maxMs, baseMs * 2^(attempt-1))]. */
export function backoffMs(attempt: number, baseMs: number, maxMs: number, random: () => number = Math.random): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(random() * ceiling);
}

/** Equal jitter: at least half the value, so idle pulls never hammer the server. */
export function withJitter(ms: number, random: () => number = Math.random): number {
  return Math.round(ms / 2 + random() * (ms / 2));
}

/** Logs at most once per `intervalMs` per key (e.g. the near-deadline warning). */
export class RateLimiter {
  readonly #intervalMs: number;
  readonly #last = new Map<string, number>();

  constructor(intervalMs: number) {
    this.#intervalMs = intervalMs;
  }

  /** True when the caller may act now for `key`. */
  allow(key: string, nowMs: number): boolean {
    const last = this.#last.get(key);
    if (last !== undefined && nowMs - last < this.#intervalMs) return false;
    this.#last.set(key, nowMs);
    return true;
  }
}
