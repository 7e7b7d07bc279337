import { betterSqlite3Failure, loadBetterSqlite3, openBetterSqlite3 } from './better-sqlite3.js';
import type { SqliteDatabase, SqliteDriverName, SqliteOpenOptions } from './database.js';
import { loadNodeSqlite, openNodeSqlite } from './node-sqlite.js';

/** The environment variable that picks the driver when the caller does not. */
export const SQLITE_DRIVER_ENV = 'DURABLE_WORKER_SQLITE_DRIVER';

/**
 * Drivers in order of preference. `node:sqlite` first: it comes with Node (no native build, no ABI
 * to match after a Node upgrade), and better-sqlite3 is no faster on the same Node (compare them with
 * bench/store/claims.ts `--sqlite-driver`, or any run with the variable below).
 * better-sqlite3 serves the Nodes without it (20, and 22 before 22.13).
 */
const PREFERENCE: readonly SqliteDriverName[] = ['node:sqlite', 'better-sqlite3'];

const OPENERS: Record<SqliteDriverName, (path: string, options: SqliteOpenOptions) => SqliteDatabase | undefined> = {
  'node:sqlite': openNodeSqlite,
  'better-sqlite3': openBetterSqlite3,
};

const LOADERS: Record<SqliteDriverName, () => unknown> = {
  'node:sqlite': loadNodeSqlite,
  'better-sqlite3': loadBetterSqlite3,
};

/** The drivers this process can load, in order of preference (each is loaded to find out). */
export function availableSqliteDrivers(): SqliteDriverName[] {
  return PREFERENCE.filter((driver) => LOADERS[driver]() !== undefined);
}

/**
 * Opens (creating when absent, unless read-only) the SQLite file at `path` (or `:memory:`) with the
 * driver `options.driver`, else `DURABLE_WORKER_SQLITE_DRIVER`, else the first one this Node has.
 * Only the chosen driver is loaded. Throws when that driver is missing or SQLite cannot open the
 * file (the driver's error). The parent folder must exist.
 */
export function openSqlite(path: string, options: SqliteOpenOptions = {}): SqliteDatabase {
  const wanted = options.driver ?? driverFromEnv();
  if (wanted !== undefined) {
    const db = OPENERS[wanted](path, options);
    if (db === undefined) throw new Error(`the SQLite driver ${wanted} is not available in Node ${process.version}: ${whyMissing(wanted)}`);
    return db;
  }
  for (const driver of PREFERENCE) {
    const db = OPENERS[driver](path, options);
    if (db !== undefined) return db;
  }
  throw new Error(`no SQLite driver in Node ${process.version}: ${whyMissing('node:sqlite')}; ${whyMissing('better-sqlite3')}`);
}

function driverFromEnv(): SqliteDriverName | undefined {
  const value = process.env[SQLITE_DRIVER_ENV]?.trim();
  if (value === undefined || value === '') return undefined;
  if (value === 'node:sqlite' || value === 'better-sqlite3') return value;
  throw new Error(`${SQLITE_DRIVER_ENV} must be node:sqlite or better-sqlite3 (got "${value}")`);
}

function whyMissing(driver: SqliteDriverName): string {
  if (driver === 'node:sqlite') return 'node:sqlite needs Node >= 22.13';
  return `better-sqlite3: ${betterSqlite3Failure() ?? 'not installed'}`;
}
