import { dirname } from 'node:path';
import { makeDirectorySync } from '../fs/make-directory.js';
import { openSqlite, type SqliteDatabase, type SqliteDriverName } from '../sqlite/index.js';
import { WalCheckpointer } from './sqlite-checkpointer.js';
import { prepareSchema } from './sqlite-schema.js';
import { prepareFailures } from './sqlite-failures.js';
import { SqliteDeferredRuns } from './sqlite-deferred.js';
import type { DeferredRuns } from './deferred.js';
import type { ClaimResult, ClaimState, FailureEntry, IdempotencyStore } from './store.js';
import { closedError, distinctKeys, storeError } from './store-error.js';
import { deadLetteredKey } from './key.js';

/** Options of the SQLite store. */
export interface SqliteStoreOptions {
  /** File path, or `:memory:`. The parent folder is created when missing. */
  path: string;
  /** Key namespace: several workers may share one file. */
  prefix: string;
  /** How long done marks are kept, in ms. */
  doneTtlMs: number;
  /** How long `markDone` calls are gathered into one commit, in ms (default 2). */
  groupCommitWindowMs?: number;
  /** A group is committed at once when it reaches this many keys (default 5,000). */
  groupCommitMaxKeys?: number;
  /** How often expired rows are deleted, in ms (default 60,000). */
  cleanupIntervalMs?: number;
  /** How long a write waits for another process's lock on the file, in ms (default 5,000). */
  busyTimeoutMs?: number;
  /**
   * Keys written (claims, done marks, releases) between two WAL checkpoints, which run on a
   * background thread (default 20,000: with random keys in a large file, ~16,000 WAL pages, ~64 MiB).
   * 0 leaves checkpoints to SQLite on the calling thread (`wal_autocheckpoint`, 10,000 pages).
   */
  checkpointEveryKeys?: number;
  /** The SQLite driver (default: see `openSqlite`). */
  driver?: SqliteDriverName;
  /** Failures of background work (cleanup, checkpoints); the default ignores them. */
  onBackgroundError?: (err: Error) => void;
  /** Clock in ms (default `Date.now`). */
  now?: () => number;
}

/** SQLite's own checkpoints on the calling thread when none run in the background. */
const FOREGROUND_AUTOCHECKPOINT_PAGES = 10_000;
/**
 * With background checkpoints, SQLite still checkpoints on the calling thread past this many WAL
 * pages (~400 MiB): a safety net for a thread that cannot keep up, not a path taken normally.
 */
const FALLBACK_AUTOCHECKPOINT_PAGES = 100_000;

/**
 * Expired rows one cleanup transaction deletes at most. With random keys each row costs about what
 * a done mark does (its own page), so a sweep is kept small: one of ten times this size held the
 * event loop long enough to delay batches. Up to SWEEPS_PER_TICK sweeps per cleanup tick, each in a
 * turn of its own, let the cleanup keep up with 100,000 expiries a minute (figures: docs/stores.md,
 * "sqlite:PATH").
 */
const SWEEP_ROWS = 1_000;
const SWEEPS_PER_TICK = 100;

/**
 * The connection's page cache, KiB (node:sqlite keeps SQLite's 2 MB by default); the store touches
 * one random leaf page per key, so a larger cache hits little more often, while it fills as the
 * done marks grow and stays in the process's RSS. 4 MB keeps that memory down and costs no CPU that
 * shows.
 */
const PAGE_CACHE_KIB = 4_000;

/** What the WAL file is cut back to when it starts over (64 MiB). */
const JOURNAL_SIZE_LIMIT_BYTES = 64 * 1024 * 1024;

interface ClaimRow {
  owner: string;
  expires_at: number;
}

interface DoneRow {
  expires_at: number;
}

interface PendingGroup {
  keys: string[];
  waiters: Array<{ resolve: () => void; reject: (err: Error) => void }>;
  timer: NodeJS.Timeout | undefined;
}

/**
 * SQLite's drivers are synchronous: a batch's claims run in one IMMEDIATE transaction (the write lock
 * is taken up front, so two processes sharing the file wait on busy_timeout instead of failing to
 * upgrade a read lock). WAL with synchronous=NORMAL makes commits cheap and survives a process crash
 * (not a power loss). Done marks are group-committed: the commits of a busy worker dominate its
 * cost, so marks arriving within a couple of milliseconds share one transaction. Claims and done
 * marks are kept in separate tables and WAL checkpoints run on a background thread: see
 * sqlite-schema.ts and sqlite-checkpointer.ts for why.
 */
export class SqliteIdempotencyStore implements IdempotencyStore {
  /** Runs waiting outside their lease, in this file under this prefix (docs/stores.md, "Deferred runs"). */
  readonly deferred: DeferredRuns;
  readonly #db: SqliteDatabase;
  readonly #doneTtlMs: number;
  readonly #windowMs: number;
  readonly #maxGroupKeys: number;
  readonly #now: () => number;
  readonly #onBackgroundError: (err: Error) => void;
  readonly #cleanupTimer: NodeJS.Timeout;
  readonly #checkpointer: WalCheckpointer | undefined;
  readonly #claimBatch: (keys: readonly string[], owner: string, expiresAt: number, nowMs: number) => ClaimResult;
  readonly #recordBatch: (entries: readonly FailureEntry[], owner: string, expiresAt: number, nowMs: number) => number[];
  readonly #markBatch: (keys: readonly string[], expiresAt: number) => void;
  readonly #releaseBatch: (keys: readonly string[], owner: string) => void;
  readonly #deadBatch: (keys: readonly string[], expiresAt: number, nowMs: number) => void;
  readonly #sweep: (nowMs: number) => number;
  #pending: PendingGroup | undefined;
  #closed = false;
  #closing: Promise<void> | undefined;

  private constructor(db: SqliteDatabase, prefixId: number, options: SqliteStoreOptions) {
    this.#db = db;
    this.#doneTtlMs = options.doneTtlMs;
    this.#windowMs = options.groupCommitWindowMs ?? 2;
    this.#maxGroupKeys = options.groupCommitMaxKeys ?? 5_000;
    this.#now = options.now ?? Date.now;
    this.#onBackgroundError = options.onBackgroundError ?? (() => {});

    const doneUntil = db.prepare<[number, string], DoneRow>('SELECT expires_at FROM durable_worker_done WHERE prefix_id = ? AND key = ?');
    const claimOf = db.prepare<[number, string], ClaimRow>('SELECT owner, expires_at FROM durable_worker_claims WHERE prefix_id = ? AND key = ?');
    const upsertClaim = db.prepare<[number, string, string, number], never>(
      `INSERT INTO durable_worker_claims (prefix_id, key, owner, expires_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (prefix_id, key) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at`,
    );
    const upsertDone = db.prepare<[number, string, number], never>(
      `INSERT INTO durable_worker_done (prefix_id, key, expires_at) VALUES (?, ?, ?)
       ON CONFLICT (prefix_id, key) DO UPDATE SET expires_at = excluded.expires_at`,
    );
    const deleteClaim = db.prepare<[number, string], never>('DELETE FROM durable_worker_claims WHERE prefix_id = ? AND key = ?');
    const deleteOwnClaim = db.prepare<[number, string, string], never>('DELETE FROM durable_worker_claims WHERE prefix_id = ? AND key = ? AND owner = ?');
    const failureHistories = prepareFailures(db, prefixId);
    // Bounded so one sweep never holds the write lock (nor the event loop) for long.
    const deleteExpiredDone = db.prepare<[number], never>(
      `DELETE FROM durable_worker_done WHERE (prefix_id, key) IN
         (SELECT prefix_id, key FROM durable_worker_done WHERE expires_at <= ? LIMIT ${SWEEP_ROWS})`,
    );
    // No index: the table holds the claims in flight (plus those of crashed workers), a short scan.
    const deleteExpiredClaims = db.prepare<[number], never>(
      `DELETE FROM durable_worker_claims WHERE (prefix_id, key) IN
         (SELECT prefix_id, key FROM durable_worker_claims WHERE expires_at <= ? LIMIT ${SWEEP_ROWS})`,
    );

    // IMMEDIATE: see the class comment.
    const claimTx = db.transaction((keys: readonly string[], owner: string, expiresAt: number, nowMs: number): ClaimResult => {
      const states = keys.map((key): ClaimState => {
        const done = doneUntil.get(prefixId, key);
        if (done !== undefined && done.expires_at > nowMs) return 'done';
        const claim = claimOf.get(prefixId, key);
        if (claim !== undefined && claim.expires_at > nowMs && claim.owner !== owner) return 'busy';
        upsertClaim.run(prefixId, key, owner, expiresAt);
        return 'new';
      });
      return { states, failures: failureHistories.any() ? failureHistories.historiesOf(keys, states, nowMs) : undefined };
    }, 'immediate');
    const recordTx = db.transaction(
      (entries: readonly FailureEntry[], owner: string, expiresAt: number, nowMs: number) =>
        entries.map(({ key, failedAtMs, retryAtMs }) => {
          const done = doneUntil.get(prefixId, key);
          if (done !== undefined && done.expires_at > nowMs) return 0;
          deleteOwnClaim.run(prefixId, key, owner);
          return failureHistories.record(key, failedAtMs, retryAtMs, expiresAt, nowMs);
        }),
      'immediate',
    );
    const markTx = db.transaction((keys: readonly string[], expiresAt: number) => {
      const failures = failureHistories.any();
      for (const key of keys) {
        upsertDone.run(prefixId, key, expiresAt);
        deleteClaim.run(prefixId, key);
        if (failures) failureHistories.delete(key);
      }
    }, 'immediate');
    // A key whose done mark counts (applied by another process meanwhile) is left as it is.
    const deadTx = db.transaction((keys: readonly string[], expiresAt: number, nowMs: number) => {
      const failures = failureHistories.any();
      let marked = 0;
      for (const key of keys) {
        const done = doneUntil.get(prefixId, key);
        if (done !== undefined && done.expires_at > nowMs) continue;
        upsertDone.run(prefixId, key, expiresAt);
        upsertDone.run(prefixId, deadLetteredKey(key), expiresAt);
        deleteClaim.run(prefixId, key);
        if (failures) failureHistories.delete(key);
        marked++;
      }
      return marked;
    }, 'immediate');
    const releaseTx = db.transaction((keys: readonly string[], owner: string) => {
      for (const key of keys) deleteOwnClaim.run(prefixId, key, owner);
    }, 'immediate');
    const sweepTx = db.transaction(
      (nowMs: number) =>
        Number(deleteExpiredDone.run(nowMs).changes) + Number(deleteExpiredClaims.run(nowMs).changes) + failureHistories.deleteExpired(nowMs, SWEEP_ROWS),
      'immediate',
    );

    const everyKeys = options.checkpointEveryKeys ?? 20_000;
    const walMode = db.pragma('journal_mode') === 'wal';
    this.#checkpointer =
      walMode && everyKeys > 0
        ? new WalCheckpointer({
            driver: db.driver,
            path: options.path,
            busyTimeoutMs: options.busyTimeoutMs ?? 5_000,
            everyKeys,
            onError: (err) => this.#onBackgroundError(storeError('sqlite', 'checkpoint', err)),
            onGiveUp: () => {
              if (!this.#closed) db.pragma(`wal_autocheckpoint = ${FOREGROUND_AUTOCHECKPOINT_PAGES}`);
            },
          })
        : undefined;
    const checkpointer = this.#checkpointer;
    db.pragma(`wal_autocheckpoint = ${checkpointer === undefined ? FOREGROUND_AUTOCHECKPOINT_PAGES : FALLBACK_AUTOCHECKPOINT_PAGES}`);

    this.#claimBatch = (keys, owner, expiresAt, nowMs) => {
      const result = claimTx(keys, owner, expiresAt, nowMs);
      checkpointer?.wrote(keys.length);
      return result;
    };
    this.#recordBatch = (entries, owner, expiresAt, nowMs) => {
      const counts = recordTx(entries, owner, expiresAt, nowMs);
      checkpointer?.wrote(2 * entries.length);
      return counts;
    };
    this.#markBatch = (keys, expiresAt) => {
      markTx(keys, expiresAt);
      checkpointer?.wrote(keys.length);
    };
    this.#deadBatch = (keys, expiresAt, nowMs) => checkpointer?.wrote(2 * deadTx(keys, expiresAt, nowMs));
    this.#releaseBatch = (keys, owner) => {
      releaseTx(keys, owner);
      checkpointer?.wrote(keys.length);
    };
    this.#sweep = (nowMs) => {
      const deleted = sweepTx(nowMs);
      checkpointer?.wrote(deleted);
      return deleted;
    };

    this.deferred = new SqliteDeferredRuns(db, prefixId, {
      beforeWrite: (operation) => this.#beforeWrite(operation),
      assertOpen: (operation) => this.#assertOpen(operation),
      wrote: (rows) => checkpointer?.wrote(rows),
      now: this.#now,
    });

    this.#cleanupTimer = setInterval(() => this.#sweepChunks(SWEEPS_PER_TICK), options.cleanupIntervalMs ?? 60_000);
    this.#cleanupTimer.unref();
  }

  static async open(options: SqliteStoreOptions): Promise<SqliteIdempotencyStore> {
    let db: SqliteDatabase | undefined;
    try {
      if (options.path !== ':memory:') makeDirectorySync(dirname(options.path));
      db = openSqlite(options.path, { busyTimeoutMs: options.busyTimeoutMs ?? 5_000, driver: options.driver });
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = NORMAL');
      // A burst (or a checkpoint that had to wait) may grow the WAL file; once the WAL starts over,
      // the commit that restarts it truncates the file back to this size.
      db.pragma(`journal_size_limit = ${JOURNAL_SIZE_LIMIT_BYTES}`);
      db.pragma(`cache_size = -${PAGE_CACHE_KIB}`);
      const prefixId = prepareSchema(db, options.prefix, (options.now ?? Date.now)());
      return new SqliteIdempotencyStore(db, prefixId, options);
    } catch (err) {
      db?.close();
      throw storeError('sqlite', `opening ${options.path}`, err);
    }
  }

  async claim(keys: readonly string[], owner: string, claimTtlMs: number): Promise<ClaimResult> {
    this.#assertOpen('claim');
    const wait = this.#writable();
    if (wait !== undefined) {
      await wait;
      this.#assertOpen('claim');
    }
    // Marks this process already handed to markDone are committed first: a caller that reads its
    // own writes must see them, whatever the group window.
    this.#flush();
    const unique = distinctKeys(keys);
    const nowMs = this.#now();
    let result: ClaimResult;
    try {
      result = this.#claimBatch(unique, owner, nowMs + claimTtlMs, nowMs);
    } catch (err) {
      throw storeError('sqlite', 'claim', err);
    }
    if (unique.length === keys.length) return result;
    const position = new Map(unique.map((key, i) => [key, i]));
    const { states, failures } = result;
    return {
      states: keys.map((key) => states[position.get(key) as number] as ClaimState),
      failures: failures === undefined ? undefined : keys.map((key) => failures[position.get(key) as number]),
    };
  }

  async recordFailures(entries: readonly FailureEntry[], owner: string): Promise<number[]> {
    this.#assertOpen('recordFailures');
    if (entries.length === 0) return [];
    const wait = this.#writable();
    if (wait !== undefined) {
      await wait;
      this.#assertOpen('recordFailures');
    }
    // A done mark still in the pending group must be seen: a done key is left as it is.
    this.#flush();
    const nowMs = this.#now();
    try {
      return this.#recordBatch(entries, owner, nowMs + this.#doneTtlMs, nowMs);
    } catch (err) {
      throw storeError('sqlite', 'recordFailures', err);
    }
  }

  markDone(keys: readonly string[]): Promise<void> {
    if (this.#closed) return Promise.reject(closedError('sqlite', 'markDone'));
    if (keys.length === 0) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const group = (this.#pending ??= { keys: [], waiters: [], timer: undefined });
      group.keys.push(...keys);
      group.waiters.push({ resolve, reject });
      if (group.keys.length >= this.#maxGroupKeys) this.#flushWhenWritable();
      else group.timer ??= setTimeout(() => this.#flushWhenWritable(), this.#windowMs);
    });
  }

  async markDeadLettered(keys: readonly string[]): Promise<void> {
    this.#assertOpen('markDeadLettered');
    if (keys.length === 0) return;
    const wait = this.#writable();
    if (wait !== undefined) {
      await wait;
      this.#assertOpen('markDeadLettered');
    }
    // This process's own done marks first: a key it applied is seen as applied.
    this.#flush();
    const nowMs = this.#now();
    try {
      this.#deadBatch(distinctKeys(keys), nowMs + this.#doneTtlMs, nowMs);
    } catch (err) {
      throw storeError('sqlite', 'markDeadLettered', err);
    }
  }

  async release(keys: readonly string[], owner: string): Promise<void> {
    this.#assertOpen('release');
    const wait = this.#writable();
    if (wait !== undefined) {
      await wait;
      this.#assertOpen('release');
    }
    this.#flush();
    try {
      this.#releaseBatch(keys, owner);
    } catch (err) {
      throw storeError('sqlite', 'release', err);
    }
  }

  /** Commits the pending group of done marks now instead of at the end of its window. */
  flush(): void {
    if (this.#closed || this.#pending === undefined) return;
    this.#flushWhenWritable();
  }

  /**
   * Deletes up to 1,000 expired done marks and 1,000 expired claims in one transaction; returns how
   * many. The periodic timer runs it repeatedly, each time in a turn of the event loop of its own.
   */
  deleteExpired(): number {
    if (this.#closed) return 0;
    try {
      return this.#sweep(this.#now());
    } catch (err) {
      this.#onBackgroundError(storeError('sqlite', 'cleanup', err));
      return 0;
    }
  }

  close(): Promise<void> {
    return (this.#closing ??= this.#close());
  }

  /** A cleanup tick: sweeps while sweeps come back full, at most `chunks` of them, yielding between. */
  #sweepChunks(chunks: number): void {
    if (this.deleteExpired() < SWEEP_ROWS || chunks <= 1 || this.#closed) return;
    setImmediate(() => this.#sweepChunks(chunks - 1)).unref();
  }

  async #close(): Promise<void> {
    clearInterval(this.#cleanupTimer);
    try {
      this.#flush();
    } finally {
      this.#closed = true;
      try {
        // Before the last connection closes: SQLite then checkpoints and removes the WAL itself.
        await this.#checkpointer?.close();
      } catch (err) {
        this.#onBackgroundError(storeError('sqlite', 'checkpoint', err));
      } finally {
        this.#db.close();
      }
    }
  }

  /** Resolves at once, unless a background checkpoint holds the write lock: then once it let go. */
  #writable(): Promise<string> | undefined {
    return this.#checkpointer?.writable();
  }

  /** Commits the pending group now, or once a background checkpoint let go of the write lock. */
  #flushWhenWritable(): void {
    const wait = this.#writable();
    if (wait === undefined) this.#flush();
    else void wait.then(() => this.#flush());
  }

  /** Commits the pending group of done marks, then settles every caller in it. */
  #flush(): void {
    const group = this.#pending;
    if (group === undefined) return;
    this.#pending = undefined;
    if (group.timer !== undefined) clearTimeout(group.timer);
    try {
      this.#markBatch(distinctKeys(group.keys), this.#now() + this.#doneTtlMs);
    } catch (err) {
      const wrapped = storeError('sqlite', 'markDone', err);
      for (const waiter of group.waiters) waiter.reject(wrapped);
      return;
    }
    for (const waiter of group.waiters) waiter.resolve();
  }

  /** Before a write of the deferred runs: as `release` does before its own. */
  async #beforeWrite(operation: string): Promise<void> {
    this.#assertOpen(operation);
    const wait = this.#writable();
    if (wait !== undefined) {
      await wait;
      this.#assertOpen(operation);
    }
    this.#flush();
  }

  #assertOpen(operation: string): void {
    if (this.#closed) throw closedError('sqlite', operation);
  }
}
