import type { Pool } from 'pg';
import { redactUrl } from '../observability/redact.js';
import { CLAIM, CREATE_SCHEMA, DELETE_EXPIRED, MARK_DONE, RELEASE, SCHEMA_LOCK_ID } from './postgres-sql.js';
import type { ClaimState, IdempotencyStore } from './store.js';
import { closedError, distinctKeys, storeError } from './store-error.js';

/** Options of the PostgreSQL store. */
export interface PostgresStoreOptions {
  /** `postgres://user:password@host:port/database` (or `postgresql://`). */
  url: string;
  /** Key namespace: several workers may share one table. */
  prefix: string;
  /** How long done marks are kept, in ms. */
  doneTtlMs: number;
  /** Connections in the pool (default 4). */
  poolSize?: number;
  /** Connecting, and each statement, give up after this long, in ms (default 5,000). */
  statementTimeoutMs?: number;
  /** How often expired rows are deleted, in ms (default 60,000). */
  cleanupIntervalMs?: number;
  /** Failures of background work (cleanup, idle connections dropped by the server). */
  onBackgroundError?: (err: Error) => void;
}

const CLEANUP_BATCH_ROWS = 10_000;

/**
 * `pg` Pool. Each operation is one statement over the whole batch (see postgres-sql.ts for why
 * the claim upsert is race-free). A connection the server dropped (restart, pg_terminate_backend)
 * fails the statement on it with DW_ERR_STORE; the pool discards that connection and opens a new
 * one for the next statement, so the store recovers by itself once the server is back.
 */
export class PostgresIdempotencyStore implements IdempotencyStore {
  readonly #pool: Pool;
  readonly #prefix: string;
  readonly #doneTtlMs: number;
  readonly #onBackgroundError: (err: Error) => void;
  readonly #cleanupTimer: NodeJS.Timeout;
  #closed = false;

  private constructor(pool: Pool, options: PostgresStoreOptions) {
    this.#pool = pool;
    this.#prefix = options.prefix;
    this.#doneTtlMs = options.doneTtlMs;
    this.#onBackgroundError = options.onBackgroundError ?? (() => {});
    this.#cleanupTimer = setInterval(() => void this.deleteExpired(), options.cleanupIntervalMs ?? 60_000);
    this.#cleanupTimer.unref();
  }

  static async open(options: PostgresStoreOptions): Promise<PostgresIdempotencyStore> {
    const { default: pg } = await import('pg');
    const timeoutMs = options.statementTimeoutMs ?? 5_000;
    const onBackgroundError = options.onBackgroundError ?? (() => {});
    const pool = new pg.Pool({
      connectionString: options.url,
      max: options.poolSize ?? 4,
      connectionTimeoutMillis: timeoutMs,
      statement_timeout: timeoutMs,
      // Client side too: a server that vanished without closing the socket answers nothing.
      query_timeout: timeoutMs * 2,
      application_name: 'durable-worker idempotency',
    });
    // An idle connection killed by the server emits 'error' on the pool; unhandled, it would crash.
    pool.on('error', (err) => onBackgroundError(storeError('postgres', 'idle connection', err)));
    try {
      await ensureSchema(pool);
    } catch (err) {
      await pool.end().catch(() => {});
      throw storeError('postgres', `preparing ${redactUrl(options.url)}`, err);
    }
    return new PostgresIdempotencyStore(pool, options);
  }

  async claim(keys: readonly string[], owner: string, claimTtlMs: number): Promise<ClaimState[]> {
    if (keys.length === 0) return [];
    const unique = distinctKeys(keys);
    const rows = await this.#query<{ key: string; claim_state: ClaimState }>('claim', CLAIM, [
      this.#prefix,
      unique,
      owner,
      claimTtlMs,
    ]);
    const byKey = new Map(rows.map((row) => [row.key, row.claim_state]));
    return keys.map((key) => {
      const state = byKey.get(key);
      if (state === undefined) throw storeError('postgres', 'claim', new Error(`no state returned for a key`));
      return state;
    });
  }

  async markDone(keys: readonly string[]): Promise<void> {
    if (keys.length === 0) return;
    await this.#query('markDone', MARK_DONE, [this.#prefix, distinctKeys(keys), this.#doneTtlMs]);
  }

  async release(keys: readonly string[], owner: string): Promise<void> {
    if (keys.length === 0) return;
    await this.#query('release', RELEASE, [this.#prefix, distinctKeys(keys), owner]);
  }

  /** Deletes one bounded sweep of expired rows (also run by the periodic timer); returns how many. */
  async deleteExpired(): Promise<number> {
    if (this.#closed) return 0;
    try {
      const result = await this.#pool.query(DELETE_EXPIRED, [CLEANUP_BATCH_ROWS]);
      return result.rowCount ?? 0;
    } catch (err) {
      this.#onBackgroundError(storeError('postgres', 'cleanup', err));
      return 0;
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#cleanupTimer);
    await this.#pool.end().catch(() => {});
  }

  async #query<R extends object>(operation: string, sql: string, params: unknown[]): Promise<R[]> {
    if (this.#closed) throw closedError('postgres', operation);
    try {
      // Named: each connection parses and plans the statement once, then only binds and executes.
      const result = await this.#pool.query<R>({ name: `dw_idem_${operation}`, text: sql, values: params });
      return result.rows;
    } catch (err) {
      throw storeError('postgres', operation, err);
    }
  }
}

/**
 * Creates the table and index when absent. Workers starting together serialise on an advisory
 * lock, because concurrent `CREATE TABLE IF NOT EXISTS` can still fail on the catalog's unique
 * index; a duplicate-object error is tolerated all the same (a server without advisory locks).
 */
async function ensureSchema(pool: Pool): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query('SELECT pg_advisory_xact_lock($1)', [SCHEMA_LOCK_ID]);
    await client.query(CREATE_SCHEMA);
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    const code = (err as { code?: unknown }).code;
    // 23505 unique_violation (pg_type race), 42P07 duplicate_table: someone else created it.
    if (code !== '23505' && code !== '42P07') throw err;
  } finally {
    client.release();
  }
}
