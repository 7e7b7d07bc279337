import type { Pool } from 'pg';
import { redactUrl } from '../runtime/redact-url.js';
import { deadLetteredKey } from './key.js';
import { ensureSchema, openPool, statementName } from './postgres-pool.js';
import {
  CLAIM,
  CREATE_SCHEMA,
  DELETE_EXPIRED,
  MARK_DEAD_LETTERED,
  MARK_DONE,
  MIGRATE_FAILURES,
  NEEDS_FAILURES_MIGRATION,
  RECORD_FAILURES,
  RELEASE,
  SCHEMA_LOCK_ID,
} from './postgres-sql.js';
import type { ClaimResult, ClaimState, FailureEntry, FailureHistory, IdempotencyStore } from './store.js';
import { closedError, distinctKeys, storeError } from './store-error.js';
import type { DeferredRuns } from './deferred.js';
import { PostgresDeferredRuns } from './postgres-deferred.js';
import type { PermitStore } from './permits.js';
import { PostgresPermits } from './postgres-permits.js';
import { NEEDS_PERMITS_SCHEMA, PERMITS_SCHEMA } from './postgres-permits-sql.js';
import { DEFERRED_SCHEMA, NEEDS_DEFERRED_SCHEMA } from './postgres-deferred-sql.js';

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
 * `pg` Pool (postgres-pool.ts). Each operation is one statement over the whole batch (see
 * postgres-sql.ts for why the claim upsert is race-free). A connection the server dropped fails the
 * statement on it with DW_ERR_STORE; the store recovers by itself once the server is back.
 */
export class PostgresIdempotencyStore implements IdempotencyStore {
  /** Runs waiting outside their lease, in this database under this prefix (docs/stores.md, "Deferred runs"). */
  readonly deferred: DeferredRuns;
  /** The handlers' limits, shared by every process on this database and prefix. */
  readonly permits: PermitStore;
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
    this.deferred = new PostgresDeferredRuns(pool, options.prefix, () => this.#closed);
    this.permits = new PostgresPermits(pool, options.prefix, () => this.#closed);
    this.#cleanupTimer = setInterval(() => void this.deleteExpired(), options.cleanupIntervalMs ?? 60_000);
    this.#cleanupTimer.unref();
  }

  static async open(options: PostgresStoreOptions): Promise<PostgresIdempotencyStore> {
    const onBackgroundError = options.onBackgroundError ?? (() => {});
    const pool = await openPool({
      url: options.url,
      max: options.poolSize ?? 4,
      timeoutMs: options.statementTimeoutMs ?? 5_000,
      applicationName: 'durable-worker idempotency',
      onIdleError: (err) => onBackgroundError(storeError('postgres', 'idle connection', err)),
    });
    try {
      await ensureSchema(pool, SCHEMA_LOCK_ID, CREATE_SCHEMA, [
        { needed: NEEDS_FAILURES_MIGRATION, ddl: MIGRATE_FAILURES },
        { needed: NEEDS_DEFERRED_SCHEMA, ddl: DEFERRED_SCHEMA },
        { needed: NEEDS_PERMITS_SCHEMA, ddl: PERMITS_SCHEMA },
      ]);
    } catch (err) {
      await pool.end().catch(() => {});
      throw storeError('postgres', `preparing ${redactUrl(options.url)}`, err);
    }
    return new PostgresIdempotencyStore(pool, options);
  }

  async claim(keys: readonly string[], owner: string, claimTtlMs: number): Promise<ClaimResult> {
    if (keys.length === 0) return { states: [], failures: undefined };
    const unique = distinctKeys(keys);
    const rows = await this.#query<{ key: string; claim_state: ClaimState; history: string | null }>('claim', CLAIM, [this.#prefix, unique, owner, claimTtlMs]);
    const byKey = new Map(rows.map((row) => [row.key, row]));
    const states = new Array<ClaimState>(keys.length);
    let failures: (FailureHistory | undefined)[] | undefined;
    for (let i = 0; i < keys.length; i++) {
      const row = byKey.get(keys[i] as string);
      if (row === undefined) throw storeError('postgres', 'claim', new Error(`no state returned for a key`));
      states[i] = row.claim_state;
      if (row.history === null || row.claim_state === 'done') continue;
      failures ??= new Array<FailureHistory | undefined>(keys.length);
      failures[i] = parseHistory(row.history);
    }
    return { states, failures };
  }

  async recordFailures(entries: readonly FailureEntry[], owner: string): Promise<number[]> {
    if (entries.length === 0) return [];
    const rows = await this.#query<{ key: string; failures: number }>('recordFailures', RECORD_FAILURES, [
      this.#prefix,
      entries.map((entry) => entry.key),
      entries.map((entry) => entry.failedAtMs),
      entries.map((entry) => entry.retryAtMs),
      owner,
      this.#doneTtlMs,
    ]);
    const byKey = new Map(rows.map((row) => [row.key, row.failures]));
    return entries.map(({ key }) => {
      const failures = byKey.get(key);
      if (failures === undefined) throw storeError('postgres', 'recordFailures', new Error(`no count returned for a key`));
      return failures;
    });
  }

  async markDone(keys: readonly string[]): Promise<void> {
    if (keys.length === 0) return;
    await this.#query('markDone', MARK_DONE, [this.#prefix, distinctKeys(keys), this.#doneTtlMs]);
  }

  async markDeadLettered(keys: readonly string[]): Promise<void> {
    if (keys.length === 0) return;
    await this.#query('markDeadLettered', MARK_DEAD_LETTERED, [this.#prefix, distinctKeys(keys), this.#doneTtlMs, deadLetteredKey('')]);
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
      // Named: each connection parses and plans the statement once, then only binds and executes
      // (not behind a transaction pooler, which keeps no prepared statement: then unnamed).
      const result = await this.#pool.query<R>({ name: statementName(this.#pool, `dw_idem_${operation}`), text: sql, values: params });
      return result.rows;
    } catch (err) {
      throw storeError('postgres', operation, err);
    }
  }
}

/** `failures:retryAtMs:firstFailedAtMs:lastFailedAtMs`, as CLAIM returns it. */
function parseHistory(text: string): FailureHistory {
  const [failures, retryAtMs, firstFailedAtMs, lastFailedAtMs] = text.split(':').map(Number);
  return { failures: failures as number, retryAtMs: retryAtMs as number, firstFailedAtMs: firstFailedAtMs as number, lastFailedAtMs: lastFailedAtMs as number };
}
