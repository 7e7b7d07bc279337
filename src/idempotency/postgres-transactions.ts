import { randomBytes } from 'node:crypto';
import type { Pool, PoolClient, QueryConfig, QueryResult } from 'pg';
import { TransactionError } from '../errors.js';
import { TransactionView, type TransactionClient, type TransactionQuery } from '../handlers/transaction-client.js';
import { keepsSessions, openPool } from './postgres-pool.js';
import { beginEffects, commitEffects, effectLockKey, NOT_OURS, prepareEffects, preparedOn } from './postgres-effects-sql.js';
import type { ClaimState } from './store.js';
import { closedError, distinctKeys, storeError } from './store-error.js';

/** Options of {@link EffectTransactions}: plain data, so a worker thread can open its own. */
export interface EffectTransactionsOptions {
  /** The PostgreSQL store's URL: the database that holds the effects and the done marks. */
  url: string;
  /** The store's key namespace (`--idempotency-prefix`). */
  prefix: string;
  /** How long done marks are kept, in ms: the store's. */
  doneTtlMs: number;
  /** Connections, so transactions open at once; a `begin` beyond them waits for one. */
  poolSize: number;
  /** Connecting, and the worker's own statements (begin, done marks, commit), give up after this long, in ms (default 5,000). */
  statementTimeoutMs?: number;
  /** An idle connection the server dropped. Default: ignored (the next `begin` opens another). */
  onBackgroundError?: (err: Error) => void;
}

/** What `begin` needs besides the keys. */
export interface BeginOptions {
  /**
   * The server ends the transaction (rolling it back) once it sat idle this long, or one of its
   * statements ran this long, in ms: about the lease's visibility, so a worker frozen or cut off
   * mid-run cannot hold the keys' locks, or the rows its handler locked, much past its lease.
   */
  serverTimeoutMs: number;
  /** The keys' namespace when it is not the options' `prefix` (a dead-letter replay: the record's). */
  prefix?: string | undefined;
}

export { effectLockKey };

/**
 * Transactions of transactional handlers (docs/handlers.md, "Transactional handlers"): the
 * handler's writes and the done marks of its events commit together, in the database of the
 * PostgreSQL store (same table and prefix, PostgresIdempotencyStore's SQL), or not at all. One
 * connection per open transaction, from a pool of its own: one per process or per worker thread,
 * wherever the handler runs. The store creates the table: open it first.
 */
export class EffectTransactions {
  readonly #pool: Pool;
  readonly #settings: TransactionSettings;
  #closed = false;
  readonly #markerBase = `${randomBytes(9).toString('hex')}-`;
  #opened = 0;

  private constructor(pool: Pool, options: EffectTransactionsOptions) {
    this.#pool = pool;
    this.#settings = { prefix: options.prefix, doneTtlMs: options.doneTtlMs, queryTimeoutMs: (options.statementTimeoutMs ?? 5_000) * 2 };
  }

  static async open(options: EffectTransactionsOptions): Promise<EffectTransactions> {
    const onBackgroundError = options.onBackgroundError ?? (() => {});
    const pool = await openPool({
      url: options.url,
      max: options.poolSize,
      timeoutMs: options.statementTimeoutMs ?? 5_000,
      // A handler's statements may run as long as its lease; `begin` bounds the transaction instead.
      unboundedStatements: true,
      applicationName: 'durable-worker transactional handler',
      onIdleError: (err) => onBackgroundError(storeError('postgres', 'idle connection', err)),
    });
    return new EffectTransactions(pool, options);
  }

  /**
   * Opens a transaction on a connection of its own and finds each key's state in it, in order:
   * `busy` when another transaction holds the key's lock right now (never waited for), `done` when
   * its done mark counts (the run is a duplicate: skip its effects), else `new`. The locks of
   * `new` and `done` keys are held until the transaction ends. Rejects with DW_ERR_STORE (nothing
   * stays open then). The caller must end the transaction: commit, rollback or destroy.
   */
  async begin(keys: readonly string[], options: BeginOptions): Promise<EffectTransaction> {
    if (this.#closed) throw closedError('postgres', 'begin');
    if (!Number.isFinite(options.serverTimeoutMs) || options.serverTimeoutMs <= 0)
      throw new TypeError(`begin: serverTimeoutMs must be a positive number of ms (got ${options.serverTimeoutMs})`);
    const settings = options.prefix === undefined ? this.#settings : { ...this.#settings, prefix: options.prefix };
    const prefix = settings.prefix;
    const unique = distinctKeys(keys);
    let connection: PoolClient;
    try {
      connection = await this.#pool.connect();
    } catch (err) {
      throw storeError('postgres', 'begin', err);
    }
    // Unique per transaction; random per factory, so no other process's marker matches.
    const marker = `${this.#markerBase}${(this.#opened++).toString(36)}`;
    const transaction = new EffectTransaction(connection, settings, marker);
    try {
      const prepare = prepareEffects(connection, keepsSessions(this.#pool));
      if (prepare !== undefined) await statement(connection, settings, { text: prepare });
      const sql = beginEffects(
        unique.map((key) => effectLockKey(prefix, key)),
        options.serverTimeoutMs,
        marker,
        prefix,
        unique,
        preparedOn(connection),
      );
      // Several statements in one text: pg answers with one result per statement, the done keys' last.
      const results = (await statement(connection, settings, { text: sql })) as unknown as QueryResult[];
      const held: boolean[] = unique.length === 0 ? [] : (results.at(-2)?.rows[0] as { held: boolean[] }).held;
      const done = new Set<string>(unique.length === 0 ? [] : (results.at(-1)?.rows as { key: string }[]).map((row) => row.key));
      const locked = unique.filter((_, i) => held[i] === true);
      const stateOf = new Map<string, ClaimState>(unique.map((key, i) => [key, held[i] !== true ? 'busy' : done.has(key) ? 'done' : 'new']));
      transaction.opened(
        keys.map((key) => stateOf.get(key) as ClaimState),
        new Set(locked),
      );
      return transaction;
    } catch (err) {
      const failure = storeError('postgres', 'begin', err);
      transaction.destroy(failure);
      throw failure;
    }
  }

  /** Ends the pool once every connection is back: end open transactions first. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#pool.end().catch(() => {});
  }
}

/**
 * How long a commit sent before the call's deadline (or an abort) may still answer: its outcome is
 * the call's. Below the 1 s the main thread waits for a worker thread's answer after a deadline.
 */
export const COMMIT_WAIT_MS = 500;

/** What a transaction needs of its factory's options. */
interface TransactionSettings {
  prefix: string;
  doneTtlMs: number;
  /** Client-side bound of the worker's own statements: a server that vanished without closing the socket answers nothing. */
  queryTimeoutMs: number;
}

/** One of the worker's own statements, bounded on the client (the server bounds them too, after `begin`). */
function statement<R extends object>(connection: PoolClient, settings: TransactionSettings, config: QueryConfig): Promise<QueryResult<R>> {
  // pg reads `query_timeout` per query as well as per pool (not in @types/pg's QueryConfig).
  return connection.query<R>({ ...config, query_timeout: settings.queryTimeoutMs } as QueryConfig);
}

/**
 * One open transaction: `client` is the handler's `ctx.tx`. Ends once, by the first of `commit`,
 * `rollback` and `destroy`; the others then do nothing (`commit` rejects: it must never write once
 * the transaction was given up, e.g. at the lease deadline).
 */
export class EffectTransaction {
  readonly #connection: PoolClient;
  readonly #settings: TransactionSettings;
  readonly #view: TransactionView;
  /** The connection's own failure while nobody awaited a statement on it (the server ended the session). */
  #broken: Error | undefined = undefined;
  #ended: string | undefined = undefined;
  #states: ClaimState[] = [];
  #locked: ReadonlySet<string> = new Set();
  /** A commit sent and not answered yet; `timer` once a `destroy` bounded the wait. */
  #committing: { cutOff: (err: Error) => void; timer: NodeJS.Timeout | undefined } | undefined = undefined;
  readonly #onError = (err: Error): void => {
    this.#broken ??= err;
  };

  /** Set transaction-local at BEGIN: still there at the commit only if the transaction is the one opened. */
  readonly #marker: string;

  constructor(connection: PoolClient, settings: TransactionSettings, marker: string) {
    this.#connection = connection;
    this.#settings = settings;
    this.#marker = marker;
    // A checked-out pg client has no 'error' listener: a connection the server ends while the handler
    // waits on something else would otherwise crash the process.
    connection.on('error', this.#onError);
    this.#view = new TransactionView(((textOrConfig, values) => connection.query(textOrConfig as string, values as unknown[])) as TransactionQuery);
  }

  /** Set by `begin` once the keys are locked and read. */
  opened(states: ClaimState[], locked: ReadonlySet<string>): void {
    this.#states = states;
    this.#locked = locked;
  }

  /** One state per key given to `begin`, in order. */
  get states(): readonly ClaimState[] {
    return this.#states;
  }

  /** The handler's `ctx.tx`: rejects every query once the transaction ended. */
  get client(): TransactionClient {
    return this.#view;
  }

  /**
   * Writes the done marks of `doneKeys` (keys `begin` locked: `new` or `done`) as
   * PostgresIdempotencyStore.markDone does, in the transaction, and commits: the handler's writes
   * and the marks become visible together. Rejects with DW_ERR_STORE when the commit failed or its
   * outcome is unknown (the connection dropped, or no answer within {@link COMMIT_WAIT_MS} of a
   * `destroy`): either way a next run finds the marks if the commit happened, and is then a duplicate.
   */
  async commit(doneKeys: readonly string[]): Promise<void> {
    if (this.#ended !== undefined) throw new TransactionError(`commit of a transaction that was already ${this.#ended}: nothing committed`);
    const notLocked = doneKeys.find((key) => !this.#locked.has(key));
    if (notLocked !== undefined) throw new TypeError(`commit: a done key that begin did not lock (${JSON.stringify(notLocked)})`);
    this.#end('committed');
    // A deadline that comes now must not report the call failed while its commit may still land:
    // `destroy` then cuts the wait short only after COMMIT_WAIT_MS, with an unknown outcome.
    let cutOff!: (err: Error) => void;
    const cut = new Promise<never>((_, reject) => (cutOff = reject));
    this.#committing = { cutOff, timer: undefined };
    const sent = this.#sendCommit(doneKeys);
    sent.catch(() => {});
    try {
      await Promise.race([sent, cut]);
    } catch (err) {
      this.#stopCommitWait();
      this.#release(err instanceof Error ? err : new Error(String(err)));
      // The handler ended the worker's transaction through ctx.tx: its fault, not the store's.
      if ((err as { code?: unknown }).code === NOT_OURS) {
        throw new TransactionError(
          "the transaction is no longer the worker's: its handler ended it through ctx.tx, and nothing was marked done (the worker commits or rolls back itself)",
          { cause: err },
        );
      }
      throw storeError('postgres', 'commit', err);
    }
    this.#stopCommitWait();
    this.#release(undefined);
  }

  /** Whether a commit was sent and has not answered yet: its outcome is the call's (see `destroy`). */
  get committing(): boolean {
    return this.#committing !== undefined;
  }

  async #sendCommit(doneKeys: readonly string[]): Promise<void> {
    if (this.#broken !== undefined) throw this.#broken;
    const { prefix, doneTtlMs } = this.#settings;
    // PostgresIdempotencyStore.markDone's done marks, in this transaction, checked to be the worker's, and COMMIT: one round trip.
    const results = (await statement(this.#connection, this.#settings, {
      text: commitEffects(this.#marker, prefix, distinctKeys(doneKeys), doneTtlMs, preparedOn(this.#connection)),
    })) as unknown as QueryResult[];
    // COMMIT of a transaction a failed statement aborted answers ROLLBACK, without an error.
    if (results.at(-1)?.command !== 'COMMIT') throw new Error('the transaction was rolled back: a statement in it failed (the handler caught a query error?)');
  }

  #stopCommitWait(): void {
    if (this.#committing?.timer !== undefined) clearTimeout(this.#committing.timer);
    this.#committing = undefined;
  }

  /** Rolls back (the handler's writes and any mark) and returns the connection. Never rejects. */
  async rollback(): Promise<void> {
    if (this.#ended !== undefined) return;
    this.#end('rolled back');
    try {
      if (this.#broken !== undefined) throw this.#broken;
      await statement(this.#connection, this.#settings, { text: 'ROLLBACK' });
    } catch (err) {
      // The server rolls back a transaction whose connection closed.
      this.#release(err instanceof Error ? err : new Error(String(err)));
      return;
    }
    this.#release(undefined);
  }

  /**
   * Closes the connection at once, even while a statement of the handler runs on it: the
   * transaction can then never commit, and the server rolls it back (at the latest when that
   * statement ends or reaches `serverTimeoutMs`). For the lease deadline, an abort, or a handler
   * that never settles. The handler's later queries reject.
   *
   * A commit already sent is not cut: it may have landed, and then the call's outcome is ok. It is
   * given {@link COMMIT_WAIT_MS} more to answer; after that the connection is closed and `commit`
   * rejects with DW_ERR_STORE (outcome unknown: the next run reads the done mark). Answers
   * `committing` then: the caller must wait for `commit` to settle rather than report the call.
   */
  destroy(reason: Error): 'committing' | undefined {
    const committing = this.#committing;
    if (committing !== undefined) {
      committing.timer ??= setTimeout(
        () => committing.cutOff(new Error(`no answer to COMMIT within ${COMMIT_WAIT_MS} ms of the call's end (${reason.message}): outcome unknown`)),
        COMMIT_WAIT_MS,
      );
      return 'committing';
    }
    if (this.#ended !== undefined) return undefined;
    this.#end(`destroyed (${reason.message})`);
    this.#release(reason);
    return undefined;
  }

  #end(how: string): void {
    this.#ended = how;
    this.#view.close(`its transaction was ${how}`);
  }

  /** Back to the pool, or with an error: closed and dropped from it. */
  #release(err: Error | undefined): void {
    this.#connection.removeListener('error', this.#onError);
    this.#connection.release(err);
  }
}
