/**
 * SQLite for the embedded stores, on either driver: `openSqlite(path, options)` returns a
 * `SqliteDatabase` (see database.ts for the subset and its rules). The driver is loaded at the
 * first open, so a process that never opens SQLite loads neither.
 */
export type {
  SqliteDatabase,
  SqliteDriverName,
  SqliteOpenOptions,
  SqliteRunResult,
  SqliteStatement,
  SqliteTransactionMode,
  SqliteValue,
} from './database.js';
export { availableSqliteDrivers, openSqlite, SQLITE_DRIVER_ENV } from './open.js';
export { threadOpenerSource } from './thread-source.js';
