import { randomUUID } from 'node:crypto';
import { systemClock, type Clock } from '../runtime/clock.js';
import { CONCURRENCY_RETRY_MS, type LimitCheck, type PermitAnswer, type PermitAsk, type PermitStore } from './permits.js';

/**
 * Permits in this process (the memory and SQLite stores; a SQLite file may be shared, but its
 * synchronous driver on the main thread would make every permit a blocking write): the same rules
 * as the shared adapters, on the injected clock.
 */
export class MemoryPermits implements PermitStore {
  readonly scope = 'process';
  readonly #clock: Clock;
  /** Per rate id: the start times in the window, oldest first (a sliding window log). */
  readonly #starts = new Map<string, number[]>();
  /** Per concurrency id: token -> expiresAtMs. */
  readonly #held = new Map<string, Map<string, number>>();

  constructor(clock: Clock = systemClock) {
    this.#clock = clock;
  }

  take(asks: readonly PermitAsk[]): Promise<PermitAnswer[]> {
    return Promise.resolve(asks.map((ask) => this.#takeOne(ask)));
  }

  release(token: string, checks: readonly LimitCheck[]): Promise<void> {
    for (const check of checks) if (check.kind === 'concurrency') this.#held.get(check.id)?.delete(token);
    return Promise.resolve();
  }

  #takeOne(ask: PermitAsk): PermitAnswer {
    const nowMs = this.#clock.now();
    for (const check of ask.checks) {
      const waitMs = check.kind === 'rate' ? this.#rateWait(check.id, check.max, check.perMs, nowMs) : this.#concurrencyWait(check.id, check.max, nowMs);
      if (waitMs !== undefined) return { granted: false, waitMs, refusedBy: check.kind };
    }
    const token = randomUUID();
    for (const check of ask.checks) {
      if (check.kind === 'rate') {
        const starts = this.#starts.get(check.id) ?? [];
        starts.push(nowMs);
        this.#starts.set(check.id, starts);
      } else {
        const held = this.#held.get(check.id) ?? new Map<string, number>();
        held.set(token, nowMs + ask.ttlMs);
        this.#held.set(check.id, held);
      }
    }
    return { granted: true, token };
  }

  /** Undefined when one more start fits the window ending now; else how long until it does. */
  #rateWait(id: string, max: number, perMs: number, nowMs: number): number | undefined {
    const starts = this.#starts.get(id);
    if (starts === undefined) return undefined;
    let old = 0;
    while (old < starts.length && (starts[old] as number) <= nowMs - perMs) old++;
    if (old > 0) starts.splice(0, old);
    if (starts.length === 0) this.#starts.delete(id);
    const over = starts.length + 1 - max;
    if (over <= 0) return undefined;
    // The window frees a place when its oldest start leaves it; `over` of them must leave (more than
    // one when an adaptive max came down).
    return Math.max(1, (starts[over - 1] as number) + perMs - nowMs);
  }

  #concurrencyWait(id: string, max: number, nowMs: number): number | undefined {
    const held = this.#held.get(id);
    if (held === undefined) return undefined;
    let firstExpiryMs = Infinity;
    for (const [token, expiresAtMs] of held) {
      if (expiresAtMs <= nowMs) held.delete(token);
      else firstExpiryMs = Math.min(firstExpiryMs, expiresAtMs);
    }
    if (held.size === 0) this.#held.delete(id);
    if (held.size < max) return undefined;
    return Math.max(1, Math.min(CONCURRENCY_RETRY_MS, firstExpiryMs - nowMs));
  }
}
