import type { ClaimState, IdempotencyStore } from './store.js';
import { LruTable } from '../runtime/lru-table.js';
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

/** Record states in the table. */
const CLAIMED = 1;
const DONE = 2;

export const DEFAULT_MAX_ENTRIES = 100_000;

/**
 * One process, no persistence: for `dev`, tests and single-replica workers that accept re-running
 * effects after a restart. Eviction can forget a done mark (the effect may then run again), which
 * is the price of a bounded footprint. The keys live in an LruTable (src/runtime/lru-table.ts says why not a Map).
 */
export class MemoryIdempotencyStore implements IdempotencyStore {
  readonly #table: LruTable;
  readonly #doneTtlMs: number;
  readonly #now: () => number;
  #closed = false;

  constructor(options: MemoryStoreOptions) {
    this.#doneTtlMs = options.doneTtlMs;
    this.#table = new LruTable(options.maxEntries ?? DEFAULT_MAX_ENTRIES);
    this.#now = options.now ?? Date.now;
  }

  /** Keys currently held (expired ones included until touched or evicted); for tests and metrics. */
  get size(): number {
    return this.#table.size;
  }

  async claim(keys: readonly string[], owner: string, claimTtlMs: number): Promise<ClaimState[]> {
    this.#assertOpen('claim');
    const table = this.#table;
    const nowMs = this.#now();
    const states = new Array<ClaimState>(keys.length);
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i] as string;
      let slot = table.lookup(key);
      if (slot >= 0 && table.expiresAtMs(slot) <= nowMs) {
        table.remove(slot);
        slot = table.lookup(key);
      }
      if (slot < 0) {
        table.add(key, CLAIMED, owner, nowMs + claimTtlMs);
        states[i] = 'new';
        continue;
      }
      if (table.state(slot) === DONE) states[i] = 'done';
      else if (table.owner(slot) !== owner) states[i] = 'busy';
      else {
        table.update(slot, CLAIMED, owner, nowMs + claimTtlMs);
        states[i] = 'new';
      }
      table.touch(slot);
    }
    return states;
  }

  async markDone(keys: readonly string[]): Promise<void> {
    this.#assertOpen('markDone');
    const table = this.#table;
    const expiresAtMs = this.#now() + this.#doneTtlMs;
    for (const key of keys) {
      // Just claimed, so already near the recent end of the order: updated in place.
      const slot = table.lookup(key);
      if (slot < 0) table.add(key, DONE, '', expiresAtMs);
      else table.update(slot, DONE, '', expiresAtMs);
    }
  }

  async release(keys: readonly string[], owner: string): Promise<void> {
    this.#assertOpen('release');
    const table = this.#table;
    for (const key of keys) {
      const slot = table.lookup(key);
      if (slot >= 0 && table.state(slot) === CLAIMED && table.owner(slot) === owner) table.remove(slot);
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#table.clear();
  }

  #assertOpen(operation: string): void {
    if (this.#closed) throw closedError('memory', operation);
  }
}
