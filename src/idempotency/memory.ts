import { deadLetteredKey } from './key.js';
import type { ClaimResult, ClaimState, FailureEntry, FailureHistory, IdempotencyStore } from './store.js';
import { MemoryFailures } from './memory-failures.js';
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
 * is the price of a bounded footprint. The keys live in an LruTable (src/runtime/lru-table.ts says why not a Map);
 * failure histories beside it (memory-failures.ts).
 */
export class MemoryIdempotencyStore implements IdempotencyStore {
  readonly #table: LruTable;
  readonly #doneTtlMs: number;
  readonly #failures: MemoryFailures;
  readonly #now: () => number;
  #closed = false;

  constructor(options: MemoryStoreOptions) {
    this.#doneTtlMs = options.doneTtlMs;
    this.#table = new LruTable(options.maxEntries ?? DEFAULT_MAX_ENTRIES);
    this.#failures = new MemoryFailures(options.maxEntries ?? DEFAULT_MAX_ENTRIES);
    this.#now = options.now ?? Date.now;
  }

  /** Keys currently held (expired ones included until touched or evicted); for tests and metrics. */
  get size(): number {
    return this.#table.size;
  }

  async claim(keys: readonly string[], owner: string, claimTtlMs: number): Promise<ClaimResult> {
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
    return { states, failures: this.#failures.size === 0 ? undefined : this.#historiesOf(keys, states, nowMs) };
  }

  async recordFailures(entries: readonly FailureEntry[], owner: string): Promise<number[]> {
    this.#assertOpen('recordFailures');
    const table = this.#table;
    const nowMs = this.#now();
    const expiresAtMs = nowMs + this.#doneTtlMs;
    return entries.map(({ key, failedAtMs, retryAtMs }) => {
      const slot = table.lookup(key);
      if (slot >= 0 && table.expiresAtMs(slot) > nowMs) {
        if (table.state(slot) === DONE) return 0;
        if (table.owner(slot) === owner) table.remove(slot);
      }
      return this.#failures.record(key, failedAtMs, retryAtMs, expiresAtMs, nowMs);
    });
  }

  async markDone(keys: readonly string[]): Promise<void> {
    this.#assertOpen('markDone');
    const table = this.#table;
    const expiresAtMs = this.#now() + this.#doneTtlMs;
    const failures = this.#failures.size === 0 ? undefined : this.#failures;
    for (const key of keys) {
      failures?.delete(key);
      // Just claimed, so already near the recent end of the order: updated in place.
      const slot = table.lookup(key);
      if (slot < 0) table.add(key, DONE, '', expiresAtMs);
      else table.update(slot, DONE, '', expiresAtMs);
    }
  }

  async markDeadLettered(keys: readonly string[]): Promise<void> {
    this.#assertOpen('markDeadLettered');
    const nowMs = this.#now();
    const table = this.#table;
    const open = keys.filter((key) => {
      const slot = table.lookup(key);
      return slot < 0 || table.state(slot) !== DONE || table.expiresAtMs(slot) <= nowMs;
    });
    await this.markDone([...open, ...open.map(deadLetteredKey)]);
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
    this.#failures.clear();
  }

  /** The histories of the keys not done; undefined when none has one. */
  #historiesOf(keys: readonly string[], states: ClaimState[], nowMs: number): (FailureHistory | undefined)[] | undefined {
    let found: (FailureHistory | undefined)[] | undefined;
    for (let i = 0; i < keys.length; i++) {
      if (states[i] === 'done') continue;
      const history = this.#failures.get(keys[i] as string, nowMs);
      if (history === undefined) continue;
      found ??= new Array<FailureHistory | undefined>(keys.length);
      found[i] = history;
    }
    return found;
  }

  #assertOpen(operation: string): void {
    if (this.#closed) throw closedError('memory', operation);
  }
}
