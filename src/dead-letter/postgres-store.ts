import type { Pool } from 'pg';
import { ensureSchema, openPool } from '../idempotency/postgres-pool.js';
import { redactUrl } from '../runtime/redact-url.js';
import { closedSinkError, noPrefixError, sinkError } from './errors.js';
import type { StoreQuery } from './query.js';
import { toStored } from './record.js';
import type { DeadLetterRecord, DeadLetterState, StoredDeadLetter } from './sink.js';
import { listStatement, TABLE, type SqlDialect } from './sql-query.js';
import type { DeadLetterCount, DeadLetterStore } from './store.js';

/** Run under an advisory lock: concurrent `CREATE TABLE IF NOT EXISTS` can race on pg_type. */
const SCHEMA_LOCK_ID = 0x64775f64; // "dw_d"

/**
 * `record` is `json`, not `jsonb`: it keeps the record as written (key order, number spelling) and
 * still answers `record->'event'->>'subject'` to whoever queries the table by hand. The columns
 * beside it are what the filters and the gauge read. Text orders by "C" (bytes), as pages expect.
 */
export const CREATE_SCHEMA = `
CREATE TABLE IF NOT EXISTS ${TABLE} (
  prefix           text        NOT NULL,
  id               text        NOT NULL,
  handler          text        NOT NULL,
  event_type       text        NOT NULL,
  reason           text        NOT NULL,
  state            text        NOT NULL CHECK (state IN ('dead', 'replayed', 'resolved', 'purged')),
  dead_lettered_at timestamptz NOT NULL,
  record           json        NOT NULL,
  PRIMARY KEY (prefix, id)
);
CREATE INDEX IF NOT EXISTS ${TABLE}_order ON ${TABLE} (dead_lettered_at, prefix COLLATE "C", id COLLATE "C");
CREATE INDEX IF NOT EXISTS ${TABLE}_dead ON ${TABLE} (prefix, handler, reason) WHERE state = 'dead';
`;

/** A table from before state `resolved`: its state check is replaced (metadata only, an instant's lock). */
const ALLOW_RESOLVED = {
  needed: `SELECT 1 FROM pg_constraint WHERE conrelid = to_regclass('${TABLE}') AND conname = '${TABLE}_state_check' AND pg_get_constraintdef(oid) NOT LIKE '%resolved%'`,
  ddl: `SET LOCAL lock_timeout = '5s';
ALTER TABLE ${TABLE} DROP CONSTRAINT ${TABLE}_state_check,
  ADD CONSTRAINT ${TABLE}_state_check CHECK (state IN ('dead', 'replayed', 'resolved', 'purged')) NOT VALID`,
};

/** A record still `dead` is kept as it is; a replayed or purged one starts over (the event failed again). */
const WRITE = `
INSERT INTO ${TABLE} AS t (prefix, id, handler, event_type, reason, state, dead_lettered_at, record)
VALUES ($1, $2, $3, $4, $5, 'dead', $6::timestamptz, $7::json)
ON CONFLICT (prefix, id) DO UPDATE SET
  handler = EXCLUDED.handler, event_type = EXCLUDED.event_type, reason = EXCLUDED.reason, state = 'dead',
  dead_lettered_at = EXCLUDED.dead_lettered_at, record = EXCLUDED.record
WHERE t.state <> 'dead'`;

const UPDATE = `UPDATE ${TABLE} SET state = $1, record = $2::json WHERE prefix = $3 AND id = $4 AND state = $5`;

const POSTGRES: SqlDialect = {
  param: (index) => `$${index}`,
  time: (placeholder) => `${placeholder}::timestamptz`,
  timeValue: (ms) => new Date(ms).toISOString(),
  ordered: (column) => `${column} COLLATE "C"`,
};

/**
 * `postgres://`: one row per record in `durable_worker_dead_letters` (created at start when absent,
 * like the idempotency table). A small pool of its own: dead letters are rare, and a write must
 * not wait behind the idempotency store's batch statements.
 */
export class PostgresDeadLetterStore implements DeadLetterStore {
  readonly #pool: Pool;
  readonly #prefix: string | undefined;
  #closed = false;

  private constructor(pool: Pool, prefix: string | undefined) {
    this.#pool = pool;
    this.#prefix = prefix;
  }

  static async open(options: { url: string; prefix: string | undefined; onBackgroundError?: (err: Error) => void }): Promise<PostgresDeadLetterStore> {
    const onBackgroundError = options.onBackgroundError ?? (() => {});
    const pool = await openPool({
      url: options.url,
      max: 2,
      timeoutMs: 5_000,
      applicationName: 'durable-worker dead letters',
      onIdleError: (err) => onBackgroundError(sinkError('postgres', 'idle connection', err)),
    });
    try {
      await ensureSchema(pool, SCHEMA_LOCK_ID, CREATE_SCHEMA, [ALLOW_RESOLVED]);
    } catch (err) {
      await pool.end().catch(() => {});
      throw sinkError('postgres', `preparing ${redactUrl(options.url)}`, err);
    }
    return new PostgresDeadLetterStore(pool, options.prefix);
  }

  async write(record: DeadLetterRecord): Promise<void> {
    if (this.#prefix === undefined) throw noPrefixError('postgres');
    const stored = toStored(record, this.#prefix);
    await this.#query('write', WRITE, [
      stored.prefix,
      stored.id,
      stored.handler,
      stored.event.type,
      stored.reason,
      stored.deadLetteredAt,
      JSON.stringify(stored),
    ]);
  }

  async list(query: StoreQuery): Promise<StoredDeadLetter[]> {
    const { sql, params } = listStatement(POSTGRES, query, this.#prefix);
    return (await this.#query<{ record: StoredDeadLetter }>('list', sql, params)).rows.map((row) => row.record);
  }

  async get(id: string): Promise<StoredDeadLetter[]> {
    const scoped = this.#prefix !== undefined;
    const sql = `SELECT record FROM ${TABLE} WHERE id = $1${scoped ? ' AND prefix = $2' : ''} ORDER BY prefix COLLATE "C"`;
    return (await this.#query<{ record: StoredDeadLetter }>('get', sql, scoped ? [id, this.#prefix] : [id])).rows.map((row) => row.record);
  }

  async update(next: StoredDeadLetter, expected: DeadLetterState): Promise<boolean> {
    const result = await this.#query('update', UPDATE, [next.state, JSON.stringify(next), next.prefix, next.id, expected]);
    return result.rowCount === 1;
  }

  async countDead(): Promise<DeadLetterCount[]> {
    const scoped = this.#prefix !== undefined;
    const sql = `SELECT handler, reason, count(*)::int AS count FROM ${TABLE} WHERE state = 'dead'${scoped ? ' AND prefix = $1' : ''} GROUP BY handler, reason`;
    return (await this.#query<DeadLetterCount>('count', sql, scoped ? [this.#prefix] : [])).rows;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#pool.end().catch(() => {});
  }

  async #query<R extends object>(operation: string, sql: string, params: unknown[]): Promise<{ rows: R[]; rowCount: number | null }> {
    if (this.#closed) throw closedSinkError('postgres', operation);
    try {
      return await this.#pool.query<R>(sql, params);
    } catch (err) {
      throw sinkError('postgres', operation, err);
    }
  }
}
