import { resolveBetterSqlite3 } from './better-sqlite3.js';
import type { SqliteDriverName } from './database.js';

/**
 * CommonJS source of `function openSqlite(path, busyTimeoutMs)`, which opens a file with `driver`
 * and returns that driver's own connection, for code evaluated in a worker thread (`eval: true`),
 * where neither this module nor tsx can be imported. Use only what both drivers share there:
 * `exec(sql)`, `prepare(sql).get()` / `.run()` / `.all()`, `close()`.
 */
export function threadOpenerSource(driver: SqliteDriverName): string {
  if (driver === 'better-sqlite3') {
    const entry = resolveBetterSqlite3();
    if (entry === undefined) throw new Error('the better-sqlite3 package is not installed');
    return `
function openSqlite(path, busyTimeoutMs) {
  const Database = require(${JSON.stringify(entry)});
  return new Database(path, { timeout: busyTimeoutMs });
}`;
  }
  // As in node-sqlite.ts: only the ExperimentalWarning of node:sqlite is dropped.
  return `
function openSqlite(path, busyTimeoutMs) {
  const emitWarning = process.emitWarning;
  process.emitWarning = function (warning, ...rest) {
    if (/sqlite/i.test(String((warning && warning.message) || warning))) return;
    return emitWarning.call(process, warning, ...rest);
  };
  let sqlite;
  try {
    sqlite = require('node:sqlite');
  } finally {
    process.emitWarning = emitWarning;
  }
  const db = new sqlite.DatabaseSync(path);
  db.exec('PRAGMA busy_timeout = ' + Math.trunc(busyTimeoutMs));
  return db;
}`;
}
