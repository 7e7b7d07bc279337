/**
 * The SQLite connection every embedded store uses (idempotency, dead letters): the subset of Node's
 * built-in `node:sqlite` the stores use, behind an interface of their own so that a store is written
 * against what it needs. Synchronous, like the driver; one connection per object.
 *
 * Parameters are positional (`?`) and take the values SQLite stores: null, number, bigint, string,
 * Uint8Array (never `undefined` or a boolean: the driver refuses them). Integers read back as
 * `number` (keep them within 2^53: `node:sqlite` throws beyond that).
 */

/** Which library runs SQLite: Node's own. */
export type SqliteDriverName = 'node:sqlite';

/** A value SQLite stores and the driver binds. */
export type SqliteValue = null | number | bigint | string | Uint8Array;

export interface SqliteRunResult {
  /** Rows the statement inserted, updated or deleted. */
  changes: number | bigint;
  lastInsertRowid: number | bigint;
}

/**
 * A prepared statement: prepare once, run many times. `get`, `all` and `iterate` are for statements
 * that return rows (use `run` for one that does not).
 */
export interface SqliteStatement<Params extends readonly SqliteValue[] = SqliteValue[], Row = Record<string, SqliteValue>> {
  /** Runs a statement that returns no rows (INSERT, UPDATE, DELETE, DDL). */
  run(...params: Params): SqliteRunResult;
  /** The first row, or undefined when there is none. */
  get(...params: Params): Row | undefined;
  /** Every row. */
  all(...params: Params): Row[];
  /** The rows one by one (the statement stays busy until the iteration ends). */
  iterate(...params: Params): IterableIterator<Row>;
}

/** How `transaction` starts: IMMEDIATE takes the write lock up front (see `SqliteDatabase.transaction`). */
export type SqliteTransactionMode = 'deferred' | 'immediate' | 'exclusive';

export interface SqliteDatabase {
  readonly driver: SqliteDriverName;
  /** The file path as given (or `:memory:`). */
  readonly path: string;
  prepare<Params extends readonly SqliteValue[] = SqliteValue[], Row = Record<string, SqliteValue>>(sql: string): SqliteStatement<Params, Row>;
  /** Runs one or more statements separated by `;`, returning nothing. */
  exec(sql: string): void;
  /**
   * Runs `PRAGMA <statement>` and returns the first column of its first row (undefined when the
   * pragma returns none): `pragma('journal_mode = WAL')` -> `'wal'`. For pragmas returning several
   * columns (`wal_checkpoint`), use `prepare('PRAGMA ...').get()`.
   */
  pragma(statement: string): unknown;
  /**
   * Wraps `fn` so that each call runs in one transaction: committed when `fn` returns, rolled back
   * when it throws (the error is rethrown). Mode `immediate` (write transactions shared with other
   * processes: the write lock is taken at BEGIN, so a second writer waits on the busy timeout
   * instead of failing to upgrade its read lock) or `deferred` (default). A call made inside
   * another transaction of this connection runs in a savepoint of it. `fn` must be synchronous.
   */
  transaction<Args extends unknown[], Result>(fn: (...args: Args) => Result, mode?: SqliteTransactionMode): (...args: Args) => Result;
  /** Closes the connection; statements prepared on it can no longer run. Idempotent. */
  close(): void;
}

export interface SqliteOpenOptions {
  /** Opens without write access (the file must exist). Default false. */
  readOnly?: boolean;
  /** How long a statement waits for another connection's lock before failing with SQLITE_BUSY, ms (default 5,000). */
  busyTimeoutMs?: number;
  /** The driver: `node:sqlite`, the only one (the option stays for callers that name it). */
  driver?: SqliteDriverName;
}
