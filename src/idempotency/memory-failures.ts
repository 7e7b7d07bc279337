import type { FailureHistory } from './store.js';

interface StoredHistory extends FailureHistory {
  expiresAtMs: number;
}

/**
 * The memory store's failure histories, beside its LruTable rather than in it: few keys ever fail,
 * so the table's columns stay as they are and a claim of keys without history pays one size check.
 * A Map in recency order (an update moves the key to the end), bounded like the table.
 */
export class MemoryFailures {
  readonly #byKey = new Map<string, StoredHistory>();
  readonly #maxEntries: number;

  constructor(maxEntries: number) {
    this.#maxEntries = Math.max(1, Math.floor(maxEntries));
  }

  get size(): number {
    return this.#byKey.size;
  }

  /** A copy of the key's unexpired history, or undefined (an expired one is dropped). */
  get(key: string, nowMs: number): FailureHistory | undefined {
    const stored = this.#byKey.get(key);
    if (stored === undefined) return undefined;
    if (stored.expiresAtMs <= nowMs) {
      this.#byKey.delete(key);
      return undefined;
    }
    return { failures: stored.failures, retryAtMs: stored.retryAtMs, firstFailedAtMs: stored.firstFailedAtMs, lastFailedAtMs: stored.lastFailedAtMs };
  }

  /** Counts one failed run; returns the new count. */
  record(key: string, failedAtMs: number, retryAtMs: number, expiresAtMs: number, nowMs: number): number {
    const stored = this.#byKey.get(key);
    this.#byKey.delete(key);
    const live = stored !== undefined && stored.expiresAtMs > nowMs;
    const next: StoredHistory = {
      failures: live ? stored.failures + 1 : 1,
      retryAtMs,
      firstFailedAtMs: live ? stored.firstFailedAtMs : failedAtMs,
      lastFailedAtMs: failedAtMs,
      expiresAtMs,
    };
    this.#byKey.set(key, next);
    if (this.#byKey.size > this.#maxEntries) this.#byKey.delete(this.#byKey.keys().next().value as string);
    return next.failures;
  }

  delete(key: string): void {
    this.#byKey.delete(key);
  }

  clear(): void {
    this.#byKey.clear();
  }
}
