import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';
import type { SqliteDatabase, SqliteOpenOptions, SqliteStatement, SqliteTransactionMode, SqliteValue } from './database.js';
import { TransactionRunner } from './transaction.js';

type BetterSqlite3Constructor = typeof BetterSqlite3;

let loaded: BetterSqlite3Constructor | undefined;
let failure: string | undefined;

/**
 * The `better-sqlite3` package (an optional dependency: a native module built for one Node ABI),
 * or undefined when it is not installed, not built for this Node, or known to crash on it
 * (`betterSqlite3Failure()` then says why). The native part loads at the first `new Database`, so
 * an in-memory database is opened once to find out.
 */
export function loadBetterSqlite3(): BetterSqlite3Constructor | undefined {
  if (loaded === undefined && failure === undefined) {
    try {
      const require = createRequire(import.meta.url);
      const { version } = require('better-sqlite3/package.json') as { version: string };
      failure = knownCrash(version, process.versions.node);
      if (failure === undefined) {
        const Database = require('better-sqlite3') as BetterSqlite3Constructor;
        new Database(':memory:').close();
        loaded = Database;
      }
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'MODULE_NOT_FOUND') failure = 'not installed (npm install better-sqlite3)';
      else {
        const reason = (err instanceof Error ? err.message : String(err)).replace(/\s+/g, ' ').trim();
        failure = `${reason} (npm rebuild better-sqlite3 after changing Node)`;
      }
    }
  }
  return loaded;
}

/**
 * better-sqlite3 up to 12.x derives its Database and Statement from `node::ObjectWrap`, whose
 * destructor since Node 24.19 checks for a current Node environment: a Database or Statement that
 * the garbage collector finalises outside JavaScript (any background GC) aborts the process with
 * `Assertion failed: (env) != nullptr` in RemoveEnvironmentCleanupHook. Reproduced here with
 * better-sqlite3 12.11.1 on Node 24.21.0 (one closed Database, then allocations); 13.x (Node-API)
 * fixes it but needs Node >= 22. Those Nodes all have node:sqlite.
 */
export function knownCrash(packageVersion: string, nodeVersion: string): string | undefined {
  const [packageMajor = 0] = packageVersion.split('.').map(Number);
  const [major = 0, minor = 0] = nodeVersion.split('.').map(Number);
  const affectedNode = major > 24 || (major === 24 && minor >= 19);
  if (packageMajor > 12 || !affectedNode) return undefined;
  return `version ${packageVersion} aborts the process on Node ${nodeVersion} when the garbage collector finalises one of its objects (Node >= 24.19 needs better-sqlite3 >= 13, or node:sqlite)`;
}

/** Why `loadBetterSqlite3` found no usable driver (undefined when it did, or was not called). */
export function betterSqlite3Failure(): string | undefined {
  return failure;
}

/** Where the package's entry file is, for code that opens it in another thread (undefined when absent). */
export function resolveBetterSqlite3(): string | undefined {
  try {
    return createRequire(import.meta.url).resolve('better-sqlite3');
  } catch {
    return undefined;
  }
}

export function openBetterSqlite3(path: string, options: SqliteOpenOptions): SqliteDatabase | undefined {
  const Database = loadBetterSqlite3();
  if (Database === undefined) return undefined;
  const db = new Database(path, { readonly: options.readOnly ?? false, timeout: options.busyTimeoutMs ?? 5_000 });
  return new BetterSqlite3Database(db, path);
}

class BetterSqlite3Database implements SqliteDatabase {
  readonly driver = 'better-sqlite3' as const;
  readonly path: string;
  readonly #db: BetterSqlite3.Database;
  readonly #transactions: TransactionRunner;

  constructor(db: BetterSqlite3.Database, path: string) {
    this.#db = db;
    this.path = path;
    this.#transactions = new TransactionRunner({
      prepare: (sql) => db.prepare(sql),
      exec: (sql) => db.exec(sql),
      inTransaction: () => db.inTransaction,
    });
  }

  prepare<Params extends readonly SqliteValue[] = SqliteValue[], Row = Record<string, SqliteValue>>(sql: string): SqliteStatement<Params, Row> {
    return this.#db.prepare(sql) as unknown as SqliteStatement<Params, Row>;
  }

  exec(sql: string): void {
    this.#db.exec(sql);
  }

  pragma(statement: string): unknown {
    // Its own pragma(): prepare().get() throws on a pragma that returns no rows.
    return this.#db.pragma(statement, { simple: true });
  }

  transaction<Args extends unknown[], Result>(fn: (...args: Args) => Result, mode?: SqliteTransactionMode): (...args: Args) => Result {
    return this.#transactions.wrap(fn, mode);
  }

  close(): void {
    this.#db.close(); // idempotent in better-sqlite3
  }
}
