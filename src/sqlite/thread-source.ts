/**
 * CommonJS source of `function openSqlite(path, busyTimeoutMs)`, which opens a file with
 * `node:sqlite` and returns its own connection, for code evaluated in a worker thread
 * (`eval: true`), where neither this module nor tsx can be imported. Uses only `exec(sql)`,
 * `prepare(sql).get()` / `.run()` / `.all()` and `close()`.
 */
export function threadOpenerSource(): string {
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
