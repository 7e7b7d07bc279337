import type { ClaimState, IdempotencyStore } from './store.js';
import { closedError } from './store-error.js';

/** Options of the in-process store. */
export interface MemoryStoreOptions {
  /** How long done marks are kept, in ms. */
  doneTtlMs: number;
  /** Most keys kept; the least recently used are forgotten first (default 100,000). */
  maxEntries?: number;
  /** Clock in ms (default `Date.now`); tests inject a fake one. */
  now?: () => number;
}

interface Entry {
  state: 'claimed' | 'done';
  /** Claim holder; empty for done marks. */
  owner: string;
  expiresAtMs: number;
}

export const DEFAULT_MAX_ENTRIES = 100_000;

/**
 * One process, no persistence: for `dev`, tests and single-replica workers that accept re-running
 * effects after a restart. Eviction can forget a done mark (the effect may then run again), which
 * is the price of a bounded footprint.
 *
 * A Map keeps insertion order, so deleting and re-inserting a key on every touch makes the order
 * least recently used first. Eviction walks that order with ONE iterator kept across calls: a Map
 * iterator goes on past keys deleted and onto keys added since it was made (the language says so),
 * and every key before it has been evicted. A fresh `keys().next()` per eviction instead walked past
 * every key deleted before it until V8 compacted the table: once the store was full, each new key
 * cost 20-70 µs instead of ~1 (docs/benchmarks.md).
 */
export class MemoryIdempotencyStore implements IdempotencyStore {
  readonly #entries = new Map<string, Entry>();
  readonly #doneTtlMs: number;
  readonly #maxEntries: number;
  readonly #now: () => number;
  /** Where eviction goes on: the least recently used key is the next one it yields. */
  #eviction: Iterator<string> | undefined;
  #closed = false;

  constructor(options: MemoryStoreOptions) {
    this.#doneTtlMs = options.doneTtlMs;
    this.#maxEntries = Math.max(1, options.maxEntries ?? DEFAULT_MAX_ENTRIES);
    this.#now = options.now ?? Date.now;
  }

  /** Keys currently held (expired ones included until touched or evicted); for tests and metrics. */
  get size(): number {
    return this.#entries.size;
  }

  async claim(keys: readonly string[], owner: string, claimTtlMs: number): Promise<ClaimState[]> {
    this.#assertOpen('claim');
    const nowMs = this.#now();
    return keys.map((key) => {
      const entry = this.#live(key, nowMs);
      if (entry?.state === 'done') return 'done';
      if (entry !== undefined && entry.owner !== owner) return 'busy';
      if (entry !== undefined) entry.expiresAtMs = nowMs + claimTtlMs;
      else this.#add(key, { state: 'claimed', owner, expiresAtMs: nowMs + claimTtlMs });
      return 'new';
    });
  }

  async markDone(keys: readonly string[]): Promise<void> {
    this.#assertOpen('markDone');
    const expiresAtMs = this.#now() + this.#doneTtlMs;
    for (const key of keys) {
      // Just claimed, so already near the recent end of the order: updated in place.
      const entry = this.#entries.get(key);
      if (entry === undefined) {
        this.#add(key, { state: 'done', owner: '', expiresAtMs });
      } else {
        entry.state = 'done';
        entry.owner = '';
        entry.expiresAtMs = expiresAtMs;
      }
    }
  }

  async release(keys: readonly string[], owner: string): Promise<void> {
    this.#assertOpen('release');
    for (const key of keys) {
      const entry = this.#entries.get(key);
      if (entry?.state === 'claimed' && entry.owner === owner) this.#entries.delete(key);
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#entries.clear();
    this.#eviction = undefined;
  }

  /** The unexpired entry of `key`, refreshed as most recently used; expired entries are dropped. */
  #live(key: string, nowMs: number): Entry | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    this.#entries.delete(key);
    if (entry.expiresAtMs <= nowMs) return undefined;
    this.#entries.set(key, entry);
    return entry;
  }

  /** Adds a key that has no entry (`#live` dropped it, or it never had one), evicting past the bound. */
  #add(key: string, entry: Entry): void {
    this.#entries.set(key, entry);
    while (this.#entries.size > this.#maxEntries) {
      let oldest = this.#eviction?.next();
      if (oldest === undefined || oldest.done === true) {
        // The first eviction, or (in case the store was ever emptied under it) a fresh start.
        this.#eviction = this.#entries.keys();
        oldest = this.#eviction.next();
      }
      if (oldest.done === true) break;
      this.#entries.delete(oldest.value);
    }
  }

  #assertOpen(operation: string): void {
    if (this.#closed) throw closedError('memory', operation);
  }
}
