import { HttpProblem } from './problem.js';

/**
 * A sliding-window request budget per key (tenant, application): at most `limit` admitted requests
 * within `windowMs`. Over budget is `429` with `Retry-After` in whole seconds, at least 1 (spec,
 * Errors: "header: integer seconds, minimum 1"), counted until the oldest request leaves the window.
 */
export class RateWindow {
  readonly #admitted = new Map<string, number[]>();

  constructor(
    private readonly windowMs: number,
    private readonly nowMs: () => number = Date.now,
  ) {}

  /** Counts one request of `key` against `limit`, or throws HttpProblem 429 without counting it. */
  admit(key: string, limit: number, describe: (limit: number) => string): void {
    const now = this.nowMs();
    const recent = (this.#admitted.get(key) ?? []).filter((at) => at > now - this.windowMs);
    this.#admitted.set(key, recent);
    if (recent.length >= limit) {
      const retryAfterSeconds = Math.max(1, Math.ceil((recent[0]! + this.windowMs - now) / 1000));
      throw new HttpProblem(429, describe(limit), undefined, { 'retry-after': String(retryAfterSeconds) });
    }
    recent.push(now);
  }
}
