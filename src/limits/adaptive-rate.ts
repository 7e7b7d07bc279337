import type { Clock } from '../runtime/clock.js';

/** Starts per window of a rate found adaptively, before the downstream said anything. */
export const FOUND_RATE_START = 10;
/** A throttle keeps this share of the allowed rate (multiplicative decrease). */
export const DECREASE_FACTOR = 0.8;
/** Each window in which the limit was reached adds this share of the rate at the last decrease. */
export const INCREASE_SHARE = 0.05;
/** Rates found without a declared `max` stop growing here (starts per window). */
const FOUND_RATE_CEILING = 1_000_000;

/**
 * The allowed rate of one limit under AIMD (additive increase, multiplicative decrease), as TCP's
 * congestion window: a throttle (RetryLaterError, a 429/503) keeps 80 % of the rate, at most once per
 * window or `Retry-After` (the throttles that follow come from starts made before the cut); each
 * window in which runs had to wait for this rate adds 5 % of the rate at the last cut (at least 1),
 * up to the declared `max`. Without a `max` it starts at 10 per window and doubles each window
 * until the first throttle (slow start), then goes on as above. Pure arithmetic on an injected clock.
 */
export class AdaptiveRate {
  readonly #ceiling: number;
  readonly #perMs: number;
  readonly #clock: Clock;
  #allowed: number;
  #slowStart: boolean;
  #step = 1;
  /** Runs waited for this rate since the last window boundary: the limit is what holds them back. */
  #limited = false;
  #windowStartMs: number;
  #quietUntilMs = 0;
  #throttles = 0;

  constructor(declaredMax: number | undefined, perMs: number, clock: Clock) {
    this.#ceiling = declaredMax ?? FOUND_RATE_CEILING;
    this.#perMs = perMs;
    this.#clock = clock;
    this.#allowed = declaredMax ?? FOUND_RATE_START;
    this.#slowStart = declaredMax === undefined;
    this.#step = Math.max(1, Math.round(this.#allowed * INCREASE_SHARE));
    this.#windowStartMs = clock.now();
  }

  /** The starts allowed in a window now (an integer, at least 1). */
  get max(): number {
    this.#advance();
    return Math.max(1, Math.floor(this.#allowed));
  }

  /** The allowed rate in starts per second (for the metric). */
  get perSecond(): number {
    return (this.max * 1_000) / this.#perMs;
  }

  /** Throttles heard so far (each, not only those that cut the rate). */
  get throttles(): number {
    return this.#throttles;
  }

  /** A run had to wait for this rate: demand is above it, so it may grow at the window's end. */
  limited(): void {
    this.#advance();
    this.#limited = true;
  }

  /** The downstream said "too many" (`retryAfterMs` when it said how long to keep away). */
  throttled(retryAfterMs = 0): void {
    this.#throttles++;
    this.#advance();
    const nowMs = this.#clock.now();
    if (nowMs < this.#quietUntilMs) return;
    const before = this.#allowed;
    this.#allowed = Math.max(1, before * DECREASE_FACTOR);
    this.#step = Math.max(1, Math.round(before * INCREASE_SHARE));
    this.#slowStart = false;
    this.#limited = false;
    this.#windowStartMs = nowMs;
    this.#quietUntilMs = nowMs + Math.max(this.#perMs, retryAfterMs);
  }

  /** Applies the increase of every window that ended since the last look. */
  #advance(): void {
    const nowMs = this.#clock.now();
    const windows = Math.floor((nowMs - this.#windowStartMs) / this.#perMs);
    if (windows < 1) return;
    this.#windowStartMs += windows * this.#perMs;
    if (!this.#limited) return;
    this.#limited = false;
    // Only the first window ended with runs waiting; the later ones are unknown (nothing asked).
    this.#allowed = Math.min(this.#ceiling, this.#slowStart ? this.#allowed * 2 : this.#allowed + this.#step);
  }
}
