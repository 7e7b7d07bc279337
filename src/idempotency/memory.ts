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

/** A key's record, linked into the store's recency list (least recently used at the head). */
interface Entry {
  readonly key: string;
  state: 'claimed' | 'done';
  /** Claim holder; empty for done marks. */
  owner: string;
  expiresAtMs: number;
  older: Entry | undefined;
  newer: Entry | undefined;
}

export const DEFAULT_MAX_ENTRIES = 100_000;

/**
 * One process, no persistence: for `dev`, tests and single-replica workers that accept re-running
 * effects after a restart. Eviction can forget a done mark (the effect may then run again), which
 * is the price of a bounded footprint.
 *
 * The recency order is a linked list through the entries, not the Map's insertion order: evicting
 * a Map's first key (`keys().next()`) walks past every key deleted before it until V8 compacts the
 * table, so once the store was full each new key cost 20-70 µs instead of ~1 (docs/benchmarks.md).
 */
export class MemoryIdempotencyStore implements IdempotencyStore {
  readonly #entries = new Map<string, Entry>();
  readonly #doneTtlMs: number;
  readonly #maxEntries: number;
  readonly #now: () => number;
  #oldest: Entry | undefined;
  #newest: Entry | undefined;
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
      else this.#add(key, 'claimed', owner, nowMs + claimTtlMs);
      return 'new';
    });
  }

  async markDone(keys: readonly string[]): Promise<void> {
    this.#assertOpen('markDone');
    const expiresAtMs = this.#now() + this.#doneTtlMs;
    for (const key of keys) {
      // Just claimed, so already near the recent end of the recency list: updated in place.
      const entry = this.#entries.get(key);
      if (entry === undefined) {
        this.#add(key, 'done', '', expiresAtMs);
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
      if (entry?.state === 'claimed' && entry.owner === owner) this.#remove(entry);
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#entries.clear();
    this.#oldest = this.#newest = undefined;
  }

  /** The unexpired entry of `key`, made the most recently used; an expired entry is dropped. */
  #live(key: string, nowMs: number): Entry | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    if (entry.expiresAtMs <= nowMs) {
      this.#remove(entry);
      return undefined;
    }
    if (entry !== this.#newest) {
      this.#unlink(entry);
      this.#link(entry);
    }
    return entry;
  }

  /** Adds a key that has no entry (`#live` dropped it, or it never had one), evicting past the bound. */
  #add(key: string, state: Entry['state'], owner: string, expiresAtMs: number): void {
    const entry: Entry = { key, state, owner, expiresAtMs, older: undefined, newer: undefined };
    this.#entries.set(key, entry);
    this.#link(entry);
    while (this.#entries.size > this.#maxEntries && this.#oldest !== undefined) this.#remove(this.#oldest);
  }

  #remove(entry: Entry): void {
    this.#entries.delete(entry.key);
    this.#unlink(entry);
  }

  /** Appends `entry` at the most recently used end. */
  #link(entry: Entry): void {
    entry.older = this.#newest;
    entry.newer = undefined;
    if (this.#newest === undefined) this.#oldest = entry;
    else this.#newest.newer = entry;
    this.#newest = entry;
  }

  #unlink(entry: Entry): void {
    if (entry.older === undefined) this.#oldest = entry.newer;
    else entry.older.newer = entry.newer;
    if (entry.newer === undefined) this.#newest = entry.older;
    else entry.newer.older = entry.older;
    entry.older = entry.newer = undefined;
  }

  #assertOpen(operation: string): void {
    if (this.#closed) throw closedError('memory', operation);
  }
}
