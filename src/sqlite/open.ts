import type { SqliteDatabase, SqliteOpenOptions } from './database.js';
import { openNodeSqlite } from './node-sqlite.js';

/**
 * Opens (creating when absent, unless read-only) the SQLite file at `path` (or `:memory:`) with
 * Node's built-in `node:sqlite`: no native module to build or to match to the Node that runs it.
 * Throws when SQLite cannot open the file (its error). The parent folder must exist.
 */
export function openSqlite(path: string, options: SqliteOpenOptions = {}): SqliteDatabase {
  const db = openNodeSqlite(path, options);
  if (db === undefined) throw new Error(`node:sqlite is not available in Node ${process.version}: durable-worker needs Node >= 22.13`);
  return db;
}
