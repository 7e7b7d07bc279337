/**
 * SQLite for the embedded stores, on Node's `node:sqlite`: `openSqlite(path, options)` returns a
 * `SqliteDatabase` (see database.ts for the subset and its rules). The driver is loaded at the
 * first open, so a process that never opens SQLite does not load it.
 */
export type { SqliteDatabase, SqliteDriverName, SqliteOpenOptions, SqliteRunResult, SqliteStatement, SqliteTransactionMode, SqliteValue } from './database.js';
export { openSqlite } from './open.js';
export { threadOpenerSource } from './thread-source.js';
