import { setTimeout as delay } from 'node:timers/promises';
import { whenAborted } from '../abort-fanout.js';
import { systemClock, type Clock } from '../dispatch/run-handler.js';

/**
 * Safety margin between the batch deadline and the lease expiry: time to abort handlers, write done
 * marks and get the `failed` ack to the server before the lease expires (spec: an expired lease is
 * redelivered with a higher generation and a late ack is `stale`). 10 % of the lease, at least 1 s,
 * but never more than half the lease (a 1 s lease still gets 500 ms of work).
 */
export function safetyMarginMs(visibilityMs: number): number {
  return Math.min(visibilityMs / 2, Math.max(1_000, visibilityMs * 0.1));
}

/** Sleeps `ms`, or less when `signal` aborts; never throws. */
export async function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (ms <= 0 || signal?.aborted) return;
  await delay(ms, undefined, { signal }).catch(() => {});
}

/**
 * `sleep` on `clock`: the pull loop waits on the clock the worker was given, so a test can count
 * pulls against a fake one (durable-worker/testing `createFakeClock`) instead of against wall time.
 */
export function sleepOn(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  if (clock === systemClock) return sleep(ms, signal);
  if (ms <= 0 || signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const handle = clock.setTimeout(() => {
      watch?.cancel();
      resolve();
    }, ms);
    const watch =
      signal === undefined
        ? undefined
        : whenAborted(signal, () => {
            clock.clearTimeout(handle);
            resolve();
          });
  });
}

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
  allow(key: string, nowMs: number = Date.now()): boolean {
    const last = this.#last.get(key);
    if (last !== undefined && nowMs - last < this.#intervalMs) return false;
    this.#last.set(key, nowMs);
    return true;
  }
}

/**
 * An AbortSignal that aborts once a timeout passes, for one call at a time, and the same signal from
 * call to call until it has aborted: creating an AbortController and registering the client's
 * listener on its signal cost ~10 µs in Node 20, and a worker loop acks every batch (a tenth of a
 * µs per event in a profile of a no-op handler; docs/benchmarks.md).
 */
export class ReusableTimeoutSignal {
  #controller = new AbortController();
  #timer: NodeJS.Timeout | undefined = undefined;

  /** The signal for the next call: it aborts with `reason` after `ms` unless `disarm` comes first. */
  arm(ms: number, reason: string): AbortSignal {
    clearTimeout(this.#timer);
    if (this.#controller.signal.aborted) this.#controller = new AbortController();
    const controller = this.#controller;
    this.#timer = setTimeout(() => controller.abort(new Error(reason)), ms);
    return controller.signal;
  }

  /** The call ended: its signal will not abort. */
  disarm(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
