import type { SqliteDatabase } from '../sqlite/index.js';
import { DEFERRED_SCHEMA } from './sqlite-deferred.js';

/** Cleanup finds expired done marks through it (claims are few: a scan). */
const DONE_INDEX = 'CREATE INDEX IF NOT EXISTS durable_worker_done_expires_at ON durable_worker_done (expires_at);';

/**
 * Failure histories (schema 3): a table of their own, added in place to a schema-2 file by its
 * CREATE ... IF NOT EXISTS. Few keys ever fail, so it stays small, and a claim asks it first whether
 * the prefix has any row at all (one probe per batch) before looking keys up in it.
 */
const FAILURES = `
CREATE TABLE IF NOT EXISTS durable_worker_failures (
  prefix_id       INTEGER NOT NULL,
  key             TEXT    NOT NULL,
  failures        INTEGER NOT NULL,
  retry_at        INTEGER NOT NULL,
  first_failed_at INTEGER NOT NULL,
  last_failed_at  INTEGER NOT NULL,
  expires_at      INTEGER NOT NULL,
  PRIMARY KEY (prefix_id, key)
) WITHOUT ROWID;
`;

/**
 * The SQLite store's tables (schema 2, plus schema 3's failures table and the deferred runs' table). Claims and done marks live apart: a claim is short-lived
 * (written by `claim`, deleted by `markDone` or `release`), so its table stays as small as the work
 * in flight and a batch's claims share a few B-tree pages; the done table holds days of marks, and
 * each of its rows is as short as it can be (no state, no owner, the prefix as a small integer).
 * With random event ids every key written lands on its own page of a large table, so a write costs
 * a WAL frame per key: schema 1 (`durable_worker_idempotency`, one table for both) paid that twice
 * per key (claim, then done mark), plus a wider expires_at index entry, and again on release.
 */
const SCHEMA = `
CREATE TABLE IF NOT EXISTS durable_worker_prefixes (
  id     INTEGER PRIMARY KEY,
  prefix TEXT    NOT NULL UNIQUE
);
CREATE TABLE IF NOT EXISTS durable_worker_claims (
  prefix_id  INTEGER NOT NULL,
  key        TEXT    NOT NULL,
  owner      TEXT    NOT NULL,
  expires_at INTEGER NOT NULL,
  PRIMARY KEY (prefix_id, key)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS durable_worker_done (
  prefix_id  INTEGER NOT NULL,
  key        TEXT    NOT NULL,
  expires_at INTEGER NOT NULL,
  PRIMARY KEY (prefix_id, key)
) WITHOUT ROWID;
${DONE_INDEX}
${FAILURES}
${DEFERRED_SCHEMA}`;

/** Schema 1's table (versions before schema 2); migrated once, then replaced by a view of that name. */
const LEGACY_TABLE = 'durable_worker_idempotency';

/**
 * Schema 1's shape over schema 2's tables, for people querying the file by hand. It also keeps an
 * older durable-worker from opening a migrated file: its `CREATE INDEX ... ON durable_worker_idempotency`
 * fails on a view (DW_ERR_STORE at start) instead of silently starting an empty table and re-running
 * every effect recorded since the migration.
 */
const LEGACY_VIEW = `
CREATE VIEW IF NOT EXISTS ${LEGACY_TABLE} (prefix, key, state, owner, expires_at) AS
  SELECT p.prefix, c.key, 'claimed', c.owner, c.expires_at FROM durable_worker_claims c JOIN durable_worker_prefixes p ON p.id = c.prefix_id
  UNION ALL
  SELECT p.prefix, d.key, 'done', NULL, d.expires_at FROM durable_worker_done d JOIN durable_worker_prefixes p ON p.id = d.prefix_id;
`;

/**
 * Creates the tables when absent and migrates a schema-1 file: its unexpired claims and done marks
 * are copied, then the old table is dropped, all in one IMMEDIATE transaction (processes opening the
 * file together serialise on it; the second finds the work done). Returns the id of `prefix`.
 */
export function prepareSchema(db: SqliteDatabase, prefix: string, nowMs: number): number {
  const migrate = db.transaction(() => {
    db.exec(SCHEMA);
    const legacy = db.prepare<[string], { type: string }>('SELECT type FROM sqlite_schema WHERE name = ?').get(LEGACY_TABLE)?.type;
    if (legacy === 'table') {
      db.prepare(`INSERT OR IGNORE INTO durable_worker_prefixes (prefix) SELECT DISTINCT prefix FROM ${LEGACY_TABLE}`).run();
      // The old table is read in its key order (`+expires_at` keeps the planner off its expires_at
      // index), so the new tables grow by appending; the new index is built once, sorted, at the
      // end: appending to a B-tree touches the last page only, where inserts in random order touch
      // pages all over the file.
      db.exec('DROP INDEX durable_worker_done_expires_at');
      db.prepare(
        `INSERT OR REPLACE INTO durable_worker_done (prefix_id, key, expires_at)
         SELECT p.id, o.key, o.expires_at FROM ${LEGACY_TABLE} o JOIN durable_worker_prefixes p ON p.prefix = o.prefix
         WHERE o.state = 'done' AND +o.expires_at > ?`,
      ).run(nowMs);
      db.exec(DONE_INDEX);
      db.prepare(
        `INSERT OR REPLACE INTO durable_worker_claims (prefix_id, key, owner, expires_at)
         SELECT p.id, o.key, o.owner, o.expires_at FROM ${LEGACY_TABLE} o JOIN durable_worker_prefixes p ON p.prefix = o.prefix
         WHERE o.state = 'claimed' AND o.owner IS NOT NULL AND +o.expires_at > ?`,
      ).run(nowMs);
      db.exec(`DROP TABLE ${LEGACY_TABLE}`); // drops its expires_at index too
    }
    if (legacy !== 'view') db.exec(LEGACY_VIEW);
    db.prepare('INSERT OR IGNORE INTO durable_worker_prefixes (prefix) VALUES (?)').run(prefix);
    return (db.prepare<[string], { id: number }>('SELECT id FROM durable_worker_prefixes WHERE prefix = ?').get(prefix) as { id: number }).id;
  }, 'immediate');
  return migrate();
}
