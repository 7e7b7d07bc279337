import { dirname } from 'node:path';
import { makeDirectorySync } from '../fs/make-directory.js';

/**
 * The SQLite the dead-letter sink needs: the subset that better-sqlite3 and Node's own `node:sqlite`
 * share (`prepare` -> `run`/`get`/`all` with positional `?` parameters, `exec`, `close`), so the
 * sink is written against neither. `openSqliteDatabase` is the one place that picks a driver.
 */
export type SqliteValue = string | number | bigint | null;

export interface SqliteStatement {
  run(...params: SqliteValue[]): { changes: number | bigint };
  get(...params: SqliteValue[]): unknown;
  all(...params: SqliteValue[]): unknown[];
}

export interface SqliteDatabase {
  prepare(sql: string): SqliteStatement;
  exec(sql: string): void;
  close(): void;
}

/** Opens (creating the file and its folder) a database; `busyTimeoutMs` is how long a write waits for another process's lock. */
export async function openSqliteDatabase(path: string, busyTimeoutMs: number): Promise<SqliteDatabase> {
  const { default: Database } = await import('better-sqlite3');
  if (path !== ':memory:') makeDirectorySync(dirname(path));
  const db = new Database(path, { timeout: busyTimeoutMs });
  return {
    prepare: (sql) => db.prepare(sql) as unknown as SqliteStatement,
    exec: (sql) => void db.exec(sql),
    close: () => void db.close(),
  };
}
