/**
 * The idempotency store: one small interface, N adapters chosen at the edge by URL
 * (`memory`, `sqlite:PATH`, `redis://`, `postgres://`). Keys are `<handler name>:<event id>`;
 * adapters namespace them with the configured prefix themselves.
 */

/**
 * What a claim found for a key:
 * - `new`: the caller now holds the claim (also when it already held it: same owner re-claims);
 * - `done`: the effect was recorded before; skip it (counted as a duplicate);
 * - `busy`: another owner holds an unexpired claim (a lease moved between workers); wait or fail.
 */
export type ClaimState = 'new' | 'done' | 'busy';

export interface IdempotencyStore {
  /**
   * Claims every key for `claimTtlMs` on behalf of `owner`, in one round trip / transaction.
   * Returns one state per key, in order. An expired claim of another owner is taken over.
   */
  claim(keys: readonly string[], owner: string, claimTtlMs: number): Promise<ClaimState[]>;
  /** Records the effects as done (kept for the store's done TTL); replaces any claim. */
  markDone(keys: readonly string[]): Promise<void>;
  /** Drops `owner`'s claims on the keys (the events failed and will be retried). Done marks stay. */
  release(keys: readonly string[], owner: string): Promise<void>;
  /**
   * Writes now what the store holds back to group it with later writes (done marks): a caller is
   * waiting for them (a batch about to ack). Stores that write at once need none.
   */
  flush?(): void;
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
