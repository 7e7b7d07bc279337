import { dirname } from 'node:path';
import { makeDirectorySync } from '../fs/make-directory.js';
import { openSqlite, type SqliteDatabase, type SqliteStatement, type SqliteValue } from '../sqlite/index.js';
import { closedSinkError, noPrefixError, sinkError } from './errors.js';
import type { StoreQuery } from './query.js';
import { deadLetteredAtMs, toStored } from './record.js';
import type { DeadLetterRecord, DeadLetterState, StoredDeadLetter } from './sink.js';
import { listStatement, TABLE, type SqlDialect } from './sql-query.js';
import type { DeadLetterCount, DeadLetterStore } from './store.js';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS ${TABLE} (
  prefix           TEXT    NOT NULL,
  id               TEXT    NOT NULL,
  handler          TEXT    NOT NULL,
  event_type       TEXT    NOT NULL,
  reason           TEXT    NOT NULL,
  state            TEXT    NOT NULL CHECK (state IN ('dead', 'replayed', 'resolved', 'purged')),
  dead_lettered_at INTEGER NOT NULL,
  record           TEXT    NOT NULL,
  PRIMARY KEY (prefix, id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS ${TABLE}_order ON ${TABLE} (dead_lettered_at, prefix, id);
CREATE INDEX IF NOT EXISTS ${TABLE}_dead ON ${TABLE} (prefix, handler, reason) WHERE state = 'dead';
`;

/**
 * A table from before state `resolved`: SQLite cannot change a CHECK, so the table is copied into
 * one that allows it (same columns, same rows), in the opening transaction.
 */
const ALLOW_RESOLVED = `
ALTER TABLE ${TABLE} RENAME TO ${TABLE}_before_resolved;
DROP INDEX IF EXISTS ${TABLE}_order;
DROP INDEX IF EXISTS ${TABLE}_dead;
${SCHEMA}
INSERT INTO ${TABLE} SELECT * FROM ${TABLE}_before_resolved;
DROP TABLE ${TABLE}_before_resolved;
`;

/** A record still `dead` is kept as it is; a replayed or purged one starts over (the event failed again). */
const WRITE = `
INSERT INTO ${TABLE} (prefix, id, handler, event_type, reason, state, dead_lettered_at, record)
VALUES (?, ?, ?, ?, ?, 'dead', ?, ?)
ON CONFLICT (prefix, id) DO UPDATE SET
  handler = excluded.handler, event_type = excluded.event_type, reason = excluded.reason, state = 'dead',
  dead_lettered_at = excluded.dead_lettered_at, record = excluded.record
WHERE state <> 'dead'`;

const UPDATE = `UPDATE ${TABLE} SET state = ?, record = ? WHERE prefix = ? AND id = ? AND state = ?`;

const SQLITE: SqlDialect = {
  param: () => '?',
  time: (placeholder) => placeholder,
  timeValue: (ms) => ms,
  // BINARY collation: code point order, as JS compares these ids in practice.
  ordered: (column) => column,
};

/**
 * `sqlite:PATH`: one row per record in `durable_worker_dead_letters` (the idempotency store's file
 * may hold it too). WAL with synchronous=FULL: a commit is on disk before `write` resolves, as a
 * dead letter must be (rare writes, so the fsync costs nothing that matters). Several processes may
 * share the file; writes wait up to the busy timeout for another's lock.
 */
export class SqliteDeadLetterStore implements DeadLetterStore {
  readonly #db: SqliteDatabase;
  readonly #prefix: string | undefined;
  readonly #write: SqliteStatement;
  readonly #update: SqliteStatement;
  #closed = false;

  private constructor(db: SqliteDatabase, prefix: string | undefined) {
    this.#db = db;
    this.#prefix = prefix;
    this.#write = db.prepare(WRITE);
    this.#update = db.prepare(UPDATE);
  }

  static async open(options: { path: string; prefix: string | undefined; busyTimeoutMs?: number }): Promise<SqliteDeadLetterStore> {
    let db: SqliteDatabase | undefined;
    try {
      if (options.path !== ':memory:') makeDirectorySync(dirname(options.path));
      db = openSqlite(options.path, { busyTimeoutMs: options.busyTimeoutMs ?? 5_000 });
      db.exec('PRAGMA journal_mode = WAL');
      db.exec('PRAGMA synchronous = FULL');
      db.exec(`BEGIN IMMEDIATE; ${SCHEMA}`);
      const table = db.prepare<SqliteValue[], { sql: string }>(`SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?`).get(TABLE);
      if (table !== undefined && !table.sql.includes("'resolved'")) db.exec(ALLOW_RESOLVED);
      db.exec('COMMIT');
      return new SqliteDeadLetterStore(db, options.prefix);
    } catch (err) {
      db?.close();
      throw sinkError('sqlite', `opening ${options.path}`, err);
    }
  }

  async write(record: DeadLetterRecord): Promise<void> {
    if (this.#prefix === undefined) throw noPrefixError('sqlite');
    const stored = toStored(record, this.#prefix);
    this.#run('write', () =>
      this.#write.run(stored.prefix, stored.id, stored.handler, stored.event.type, stored.reason, deadLetteredAtMs(stored), JSON.stringify(stored)),
    );
  }

  async list(query: StoreQuery): Promise<StoredDeadLetter[]> {
    const { sql, params } = listStatement(SQLITE, query, this.#prefix);
    return this.#records('list', sql, params);
  }

  async get(id: string): Promise<StoredDeadLetter[]> {
    const scoped = this.#prefix !== undefined;
    return this.#records(
      'get',
      `SELECT record FROM ${TABLE} WHERE id = ?${scoped ? ' AND prefix = ?' : ''} ORDER BY prefix`,
      scoped ? [id, this.#prefix as string] : [id],
    );
  }

  async update(next: StoredDeadLetter, expected: DeadLetterState): Promise<boolean> {
    const result = this.#run('update', () => this.#update.run(next.state, JSON.stringify(next), next.prefix, next.id, expected));
    return Number(result.changes) === 1;
  }

  async countDead(): Promise<DeadLetterCount[]> {
    const scoped = this.#prefix !== undefined;
    const sql = `SELECT handler, reason, count(*) AS count FROM ${TABLE} WHERE state = 'dead'${scoped ? ' AND prefix = ?' : ''} GROUP BY handler, reason`;
    const rows = this.#run('count', () => this.#db.prepare<SqliteValue[], DeadLetterCount>(sql).all(...(scoped ? [this.#prefix as string] : [])));
    return rows.map((row) => ({ handler: row.handler, reason: row.reason, count: Number(row.count) }));
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#db.close();
  }

  #records(operation: string, sql: string, params: SqliteValue[]): StoredDeadLetter[] {
    const rows = this.#run(operation, () => this.#db.prepare<SqliteValue[], { record: string }>(sql).all(...params));
    return rows.map((row) => JSON.parse(row.record) as StoredDeadLetter);
  }

  #run<T>(operation: string, statement: () => T): T {
    if (this.#closed) throw closedSinkError('sqlite', operation);
    try {
      return statement();
    } catch (err) {
      throw sinkError('sqlite', operation, err);
    }
  }
}
