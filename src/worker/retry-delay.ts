import type { DispatchError } from '../dispatch/types.js';
import { ErrorCodes } from '../errors.js';

/** `--retry-backoff-min` / `--retry-backoff-max`: the waits between a failed run and the next. */
export interface RetryBackoff {
  minMs: number;
  maxMs: number;
}

/** Each wait is up to this fraction longer than the doubling alone (jitter spreads retries that failed together). */
const JITTER_FRACTION = 0.25;

/**
 * How long a handler's failed run waits before its next run on the same event (docs/handlers.md,
 * "Failures and retries"): what the handler asked for (RetryLaterError, a `Retry-After`), capped by
 * the maximum; otherwise `min` doubling with each failure, up to a quarter longer at random, never
 * above the maximum. `failures` counts this one (1 after the first failed run).
 */
export function retryDelayMs(failures: number, error: DispatchError, backoff: RetryBackoff, random: () => number = Math.random): number {
  const asked = error.retryAfterMs;
  if (asked !== undefined && asked > 0) return Math.min(asked, backoff.maxMs);
  const doubled = backoff.minMs * 2 ** Math.min(30, Math.max(0, failures - 1));
  return Math.round(Math.min(backoff.maxMs, doubled * (1 + random() * JITTER_FRACTION)));
}

/** Ends of a transactional call that are not its handler's failure: no attempt counted (HandlerRun.#uncounted). */
export const UNCOUNTED_TRANSACTION_ENDS: ReadonlySet<string | undefined> = new Set([ErrorCodes.STORE, ErrorCodes.KEY_BUSY, ErrorCodes.ROLLED_BACK]);
/** A key another worker's transaction holds is tried again this much later. */
const KEY_BUSY_RETRY_MS = 250;

/** When an uncounted end runs again, in its lease: a busy key shortly, a rolled-back call at once. */
export function uncountedRetryDelayMs(error: DispatchError): number {
  return error.code === ErrorCodes.KEY_BUSY ? KEY_BUSY_RETRY_MS : 0;
}
