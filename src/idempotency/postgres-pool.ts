import type { Pool } from 'pg';
import { importOptional } from '../runtime/optional-package.js';

/** What the PostgreSQL adapters (idempotency store, dead-letter sink) open the same way. */
export interface PostgresPoolOptions {
  url: string;
  /** Connections in the pool. */
  max: number;
  /** Connecting, and each statement, give up after this long, in ms. */
  timeoutMs: number;
  /**
   * Statements run as long as the caller lets them: `timeoutMs` bounds connecting only. For
   * connections that run a handler's own statements, which its transaction bounds instead
   * (postgres-transactions.ts). Default false.
   */
  unboundedStatements?: boolean;
  /** `application_name`: who holds a connection, in pg_stat_activity. */
  applicationName: string;
  /** An idle connection the server dropped (a restart, pg_terminate_backend). */
  onIdleError: (err: Error) => void;
}

/** The URL parameter that says a pooler in transaction mode stands between us and the server. */
const POOL_MODE = 'pool_mode';

/** Pools opened through a pooler in transaction mode (`?pool_mode=transaction`). */
const transactionPooled = new WeakSet<Pool>();

/**
 * `url` without `pool_mode`, and whether it said `transaction`. Behind a pooler in transaction
 * pooling (PgBouncer's `pool_mode = transaction`) each transaction may run on another server
 * connection, so nothing may outlive one: no startup parameters (PgBouncer refuses those it does
 * not know), no session settings, no named prepared statements (PgBouncer 1.18 keeps none). Given,
 * not detected: a pooler answers as the server does until one of those fails mid-run.
 */
export function poolTarget(url: string): { url: string; transactionPooled: boolean } {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { url, transactionPooled: false };
  }
  const mode = parsed.searchParams.get(POOL_MODE);
  if (mode === null) return { url, transactionPooled: false };
  if (mode !== 'transaction' && mode !== 'session') throw new TypeError(`${POOL_MODE} must be transaction or session (got ${mode})`);
  parsed.searchParams.delete(POOL_MODE);
  return { url: parsed.toString(), transactionPooled: mode === 'transaction' };
}

/** Whether what a connection keeps for its session (prepared statements) stays with it: not behind a transaction pooler. */
export function keepsSessions(pool: Pool): boolean {
  return !transactionPooled.has(pool);
}

/** `name` for a statement on `pool`, or none (unnamed) behind a transaction pooler. */
export function statementName(pool: Pool, name: string): string {
  // pg reads an empty name as an unnamed statement.
  return keepsSessions(pool) ? name : '';
}

/**
 * A `pg` Pool. A connection the server dropped fails the statement on it; the pool discards that
 * connection and opens a new one for the next statement, so an adapter recovers by itself once the
 * server is back. Behind a transaction pooler (poolTarget) the server-side statement timeout is not
 * sent at startup: the client-side one bounds a statement, and a transaction sets its own bound
 * with SET LOCAL (postgres-effects-sql.ts).
 */
export async function openPool(options: PostgresPoolOptions): Promise<Pool> {
  const { default: pg } = await importOptional('pg', 'a postgres:// store', '--idempotency', () => import('pg'));
  const target = poolTarget(options.url);
  const pool = new pg.Pool({
    connectionString: target.url,
    max: options.max,
    connectionTimeoutMillis: options.timeoutMs,
    ...(options.unboundedStatements === true
      ? {}
      : {
          ...(target.transactionPooled ? {} : { statement_timeout: options.timeoutMs }),
          // Client side too: a server that vanished without closing the socket answers nothing.
          query_timeout: options.timeoutMs * 2,
        }),
    application_name: options.applicationName,
  });
  if (target.transactionPooled) transactionPooled.add(pool);
  // An idle connection killed by the server emits 'error' on the pool; unhandled, it would crash.
  pool.on('error', options.onIdleError);
  return pool;
}

/** A change to a table that already exists: `ddl` runs when `needed` (a query) returns a row. */
export interface SchemaMigration {
  needed: string;
  ddl: string;
}

/**
 * Runs `ddl` (CREATE ... IF NOT EXISTS) once, then each migration that is needed, in one
 * transaction. Processes starting together serialise on an advisory lock, because concurrent
 * `CREATE TABLE IF NOT EXISTS` can still fail on the catalog's unique index (and the second one
 * then finds the migrations done); a duplicate-object error is tolerated all the same (a server
 * without advisory locks). A migration is looked for before it runs, so an open of an up-to-date
 * table takes no lock an ALTER TABLE would.
 */
export async function ensureSchema(pool: Pool, lockId: number, ddl: string, migrations: readonly SchemaMigration[] = []): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query('SELECT pg_advisory_xact_lock($1)', [lockId]);
    await client.query(ddl);
    for (const migration of migrations) {
      if ((await client.query(migration.needed)).rowCount !== 0) await client.query(migration.ddl);
    }
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
