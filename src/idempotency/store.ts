/**
 * The idempotency store: one small interface, N adapters chosen at the edge by URL
 * (`memory`, `sqlite:PATH`, `redis://`, `postgres://`). Keys are `<handler name>:<event id>`;
 * adapters namespace them with the configured prefix themselves.
 */
import type { PermitStore } from './permits.js';

/**
 * What a claim found for a key:
 * - `new`: the caller now holds the claim (also when it already held it: same owner re-claims);
 * - `done`: the effect was recorded before; skip it (counted as a duplicate);
 * - `busy`: another owner holds an unexpired claim (a lease moved between workers); wait or fail.
 */
export type ClaimState = 'new' | 'done' | 'busy';

/** A key's failed runs (one handler on one event), kept beside its claim. */
export interface FailureHistory {
  /** Runs of the handler on the event that failed so far (>= 1). */
  failures: number;
  /** The next run may not start before this (ms since the epoch). */
  retryAtMs: number;
  /** When its first / last failure was recorded (ms since the epoch). */
  firstFailedAtMs: number;
  lastFailedAtMs: number;
}

export interface ClaimResult {
  /** One state per key, in order. */
  states: ClaimState[];
  /**
   * By key position: the history of keys that have failed runs and are not done; `undefined` when
   * no key of the call has any (the common case: nothing is allocated then).
   */
  failures: (FailureHistory | undefined)[] | undefined;
}

/** One failed run to record: the key `owner` claimed, when it failed, when it may run next. */
export interface FailureEntry {
  key: string;
  failedAtMs: number;
  retryAtMs: number;
}

/**
 * A key's claim and its failure history expire apart: the claim with the lease (an expired claim
 * frees the key for another owner), the history with the done TTL counted from its last failure,
 * so a count survives a lease expiring, a restart, and the event moving to another replica.
 */
export interface IdempotencyStore {
  /**
   * Claims every key for `claimTtlMs` on behalf of `owner`, in one round trip / transaction.
   * Returns one state per key, in order. An expired claim of another owner is taken over. A key's
   * failure history comes back with its claim, read atomically with it: for `new` keys (and
   * possibly `busy` ones), never for `done` ones.
   */
  claim(keys: readonly string[], owner: string, claimTtlMs: number): Promise<ClaimResult>;
  /** Records the effects as done (kept for the store's done TTL); replaces any claim and failure history. */
  markDone(keys: readonly string[]): Promise<void>;
  /**
   * Marks each key done as having ended dead-lettered: its done mark and `deadLetteredKey(key)`'s,
   * together, unless the key's done mark already counts (another worker applied it meanwhile: a
   * dead-letter mark never overwrites applied). One round trip / transaction. Every adapter has it;
   * a store without it gets `markDone` of both keys (the worker's DoneMarkWriter), which overwrites.
   */
  markDeadLettered?(keys: readonly string[]): Promise<void>;
  /** Drops `owner`'s claims on the keys. Done marks and failure histories stay. */
  release(keys: readonly string[], owner: string): Promise<void>;
  /**
   * Records one failed run per entry, atomically per key and in one round trip for the call: the
   * count goes up by one, `retryAtMs` is replaced, the first failure time is kept, the last is
   * `failedAtMs`; `owner`'s claim on the key is dropped in the same step (as `release`). Counted
   * even when the claim has meanwhile moved to another owner (the run did happen); a key already
   * done is left as it is. The history is kept for the done TTL from its last failure. Returns the
   * new counts in order (0 for a key that was done).
   */
  recordFailures(entries: readonly FailureEntry[], owner: string): Promise<number[]>;
  /**
   * Writes now what the store holds back to group it with later writes (done marks): a caller is
   * waiting for them (a batch about to ack). Stores that write at once need none.
   */
  flush?(): void;
  /**
   * Where the handlers' limits keep their permits when they must hold for every process sharing the
   * store (Redis, PostgreSQL); absent: the limits hold per process.
   */
  readonly permits?: PermitStore;
  /** Idempotent. */
  close(): Promise<void>;
}

export interface IdempotencyStoreOptions {
  /** Key namespace in shared stores; default `<tenant>:<destination>`. */
  prefix: string;
  /** How long done marks are kept, in ms (default 7 days). */
  doneTtlMs: number;
  /** Connection pool size for PostgreSQL (sized from --workers). */
  poolSize?: number;
  /** Maximum keys of the memory store's LRU (default 100,000). */
  maxEntries?: number;
  /**
   * Failures of background work that no caller awaits (periodic cleanup, a dropped connection
   * while reconnecting); the worker logs them. Default: ignored.
   */
  onBackgroundError?: (err: Error) => void;
}

export const DEFAULT_DONE_TTL_MS = 7 * 24 * 60 * 60 * 1000;
