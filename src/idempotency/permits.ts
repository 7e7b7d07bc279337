/**
 * Permits of the handlers' limits (docs/handlers.md, "Protecting a downstream"), kept where the
 * idempotency store keeps its keys, so that every replica sharing a `redis://` or `postgres://` store
 * shares them. One call takes the permits of many runs (one round trip); each ask is decided on its
 * own, in order, atomically across all its checks: granted in every one of them, or in none.
 */

/** At most `max` starts in any window of `perMs`: the starts are logged (a sliding window log). */
export interface RateCheck {
  kind: 'rate';
  /** The limit's id in the store (handler, or handler and key), without the store's prefix. */
  id: string;
  max: number;
  perMs: number;
}

/** At most `max` permits held at once; a permit is a lease that ends at its release or its `ttlMs`. */
export interface ConcurrencyCheck {
  kind: 'concurrency';
  id: string;
  max: number;
}

export type LimitCheck = RateCheck | ConcurrencyCheck;

/** The permits of one run's start (a batch call asks once per event). */
export interface PermitAsk {
  checks: readonly LimitCheck[];
  /** A concurrency permit expires this long after it is granted (its run cannot outlive its lease). */
  ttlMs: number;
}

/** Granted: `token` releases the concurrency permits. Refused: try again in `waitMs`. */
export type PermitAnswer =
  { granted: true; token: string } | { granted: false; waitMs: number; /** the check that refused */ refusedBy: 'rate' | 'concurrency' };

/**
 * How long to wait before asking again for a concurrency permit held elsewhere: a release in this
 * process wakes its waiters at once; one in another replica is seen by asking again.
 */
export const CONCURRENCY_RETRY_MS = 50;

export interface PermitStore {
  /** `deployment`: shared by every process on the store; `process`: this process only. */
  readonly scope: 'deployment' | 'process';
  take(asks: readonly PermitAsk[]): Promise<PermitAnswer[]>;
  /** Gives back the concurrency permits of a granted ask (idempotent; an unknown token is ignored). */
  release(token: string, checks: readonly LimitCheck[]): Promise<void>;
}
