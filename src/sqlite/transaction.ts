import type { SqliteStatement, SqliteTransactionMode } from './database.js';

/** What the transaction helper needs from a raw connection. */
export interface TransactionHost {
  prepare(sql: string): Pick<SqliteStatement<[]>, 'run'>;
  exec(sql: string): void;
  /** Whether SQLite still holds a transaction open (some errors, SQLITE_FULL for one, roll it back by themselves). */
  inTransaction(): boolean;
}

/**
 * `SqliteDatabase.transaction` (node:sqlite has no transaction helper of its own): BEGIN,
 * COMMIT and ROLLBACK are statements prepared once per wrapped function (a transaction then costs
 * three statement steps, no SQL parsing), and a call nested in a running transaction becomes a
 * savepoint of it. One per connection: it counts the transactions it has open.
 */
export class TransactionRunner {
  readonly #host: TransactionHost;
  #depth = 0;

  constructor(host: TransactionHost) {
    this.#host = host;
  }

  wrap<Args extends unknown[], Result>(fn: (...args: Args) => Result, mode: SqliteTransactionMode = 'deferred'): (...args: Args) => Result {
    const host = this.#host;
    const begin = host.prepare(`BEGIN ${mode.toUpperCase()}`);
    const commit = host.prepare('COMMIT');
    const rollback = host.prepare('ROLLBACK');
    return (...args: Args): Result => {
      if (this.#depth > 0) return this.#inSavepoint(fn, args);
      begin.run();
      this.#depth++;
      try {
        const result = fn(...args);
        assertSynchronous(result);
        commit.run();
        return result;
      } catch (err) {
        if (host.inTransaction()) rollbackQuietly(() => rollback.run());
        throw err;
      } finally {
        this.#depth--;
      }
    };
  }

  #inSavepoint<Args extends unknown[], Result>(fn: (...args: Args) => Result, args: Args): Result {
    const name = `dw_savepoint_${this.#depth}`;
    this.#host.exec(`SAVEPOINT ${name}`);
    this.#depth++;
    try {
      const result = fn(...args);
      assertSynchronous(result);
      this.#host.exec(`RELEASE ${name}`);
      return result;
    } catch (err) {
      if (this.#host.inTransaction()) rollbackQuietly(() => this.#host.exec(`ROLLBACK TO ${name}; RELEASE ${name}`));
      throw err;
    } finally {
      this.#depth--;
    }
  }
}

/** A transaction cannot span an `await`: other code would run inside it. */
function assertSynchronous(result: unknown): void {
  if (typeof (result as PromiseLike<unknown> | undefined)?.then === 'function') {
    throw new TypeError('a SQLite transaction function must be synchronous (it returned a promise)');
  }
}

/**
 * The caller's error is the one to report: a rollback that fails found no transaction left to roll
 * back (SQLite ended it with the error, or the driver could not tell whether one was open).
 */
function rollbackQuietly(rollback: () => unknown): void {
  try {
    rollback();
  } catch {
    // nothing left to roll back
  }
}
