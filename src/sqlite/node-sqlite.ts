import { createRequire } from 'node:module';
import type { SqliteDatabase, SqliteOpenOptions, SqliteStatement, SqliteTransactionMode, SqliteValue } from './database.js';
import { TransactionRunner } from './transaction.js';

/**
 * The part of Node's `node:sqlite` (Node >= 22.13 without a flag) used here, typed locally, as
 * this project uses it on every supported Node.
 */
interface NodeSqliteModule {
  DatabaseSync: new (path: string, options?: { readOnly?: boolean }) => NodeDatabaseSync;
}
interface NodeDatabaseSync {
  prepare(sql: string): SqliteStatement;
  exec(sql: string): void;
  close(): void;
  readonly isOpen?: boolean;
  /** Node >= 22.16 and 24: whether a transaction is open. */
  readonly isTransaction?: boolean;
}

let loaded: NodeSqliteModule | null | undefined;

/**
 * `node:sqlite`, or undefined on a Node without it. Node 22, and 24 before 24.15 (where it became a
 * release candidate), print an ExperimentalWarning when it is first loaded; this project pins the behaviour it relies on with
 * its own tests on every supported Node, so that one warning is dropped (only it) instead of
 * telling every user at every start that their SQLite store is experimental.
 */
export function loadNodeSqlite(): NodeSqliteModule | undefined {
  if (loaded !== undefined) return loaded ?? undefined;
  const emitWarning = process.emitWarning;
  process.emitWarning = function (this: NodeJS.Process, warning: string | Error, ...rest: unknown[]) {
    if (isSqliteExperimentalWarning(warning, rest)) return;
    return (emitWarning as (...args: unknown[]) => void).call(this, warning, ...rest);
  } as typeof process.emitWarning;
  try {
    loaded = createRequire(import.meta.url)('node:sqlite') as NodeSqliteModule;
  } catch {
    loaded = null; // a Node below the supported floor (22 before 22.13)
  } finally {
    process.emitWarning = emitWarning;
  }
  return loaded ?? undefined;
}

function isSqliteExperimentalWarning(warning: string | Error, rest: unknown[]): boolean {
  const text = typeof warning === 'string' ? warning : warning.message;
  const type = typeof rest[0] === 'string' ? rest[0] : (rest[0] as { type?: unknown } | undefined)?.type;
  return (type === 'ExperimentalWarning' || (warning as Error).name === 'ExperimentalWarning') && /sqlite/i.test(text);
}

export function openNodeSqlite(path: string, options: SqliteOpenOptions): SqliteDatabase | undefined {
  const sqlite = loadNodeSqlite();
  if (sqlite === undefined) return undefined;
  const db = new sqlite.DatabaseSync(path, { readOnly: options.readOnly ?? false });
  try {
    // The `timeout` option exists from Node 22.16 only; the pragma everywhere.
    db.exec(`PRAGMA busy_timeout = ${Math.trunc(options.busyTimeoutMs ?? 5_000)}`);
  } catch (err) {
    db.close();
    throw err;
  }
  return new NodeSqliteDatabase(db, path);
}

class NodeSqliteDatabase implements SqliteDatabase {
  readonly driver = 'node:sqlite' as const;
  readonly path: string;
  readonly #db: NodeDatabaseSync;
  readonly #transactions: TransactionRunner;
  #closed = false;

  constructor(db: NodeDatabaseSync, path: string) {
    this.#db = db;
    this.path = path;
    this.#transactions = new TransactionRunner({
      prepare: (sql) => db.prepare(sql) as SqliteStatement<[]>,
      exec: (sql) => db.exec(sql),
      // Before Node 22.16 there is no way to ask: ROLLBACK is then tried and its "no transaction" ignored.
      inTransaction: () => db.isTransaction ?? true,
    });
  }

  prepare<Params extends readonly SqliteValue[] = SqliteValue[], Row = Record<string, SqliteValue>>(sql: string): SqliteStatement<Params, Row> {
    // node:sqlite's statements have the run/get/all/iterate of SqliteStatement: no wrapper on the hot path.
    return this.#db.prepare(sql) as unknown as SqliteStatement<Params, Row>;
  }

  exec(sql: string): void {
    this.#db.exec(sql);
  }

  pragma(statement: string): unknown {
    const row = this.#db.prepare(`PRAGMA ${statement}`).get();
    return row === undefined ? undefined : Object.values(row)[0];
  }

  transaction<Args extends unknown[], Result>(fn: (...args: Args) => Result, mode?: SqliteTransactionMode): (...args: Args) => Result {
    return this.#transactions.wrap(fn, mode);
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#db.close();
  }
}
