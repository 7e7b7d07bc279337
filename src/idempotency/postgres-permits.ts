import { randomUUID } from 'node:crypto';
import type { Pool } from 'pg';
import { CONCURRENCY_RETRY_MS, type LimitCheck, type PermitAnswer, type PermitAsk, type PermitStore } from './permits.js';
import { statementName } from './postgres-pool.js';
import { RELEASE, TAKE } from './postgres-permits-sql.js';
import { closedError, storeError } from './store-error.js';

/** Permits in the PostgreSQL store's database, under its prefix: one function call per batch of asks. */
export class PostgresPermits implements PermitStore {
  readonly scope = 'deployment';
  readonly #pool: Pool;
  readonly #prefix: string;
  readonly #isClosed: () => boolean;

  constructor(pool: Pool, prefix: string, isClosed: () => boolean) {
    this.#pool = pool;
    this.#prefix = prefix;
    this.#isClosed = isClosed;
  }

  async take(asks: readonly PermitAsk[]): Promise<PermitAnswer[]> {
    if (asks.length === 0) return [];
    const tokens = asks.map(() => randomUUID());
    const body = asks.map((ask, a) => ({
      t: tokens[a],
      ttl: Math.ceil(ask.ttlMs),
      c: ask.checks.map((check) => [check.kind === 'rate' ? 'r' : 'c', check.id, check.max, check.kind === 'rate' ? check.perMs : 0]),
    }));
    const rows = await this.#query<{ answers: [number, number, number][] }>('take_permits', TAKE, [this.#prefix, CONCURRENCY_RETRY_MS, JSON.stringify(body)]);
    const answers = rows[0]?.answers ?? [];
    return asks.map((_, a) => {
      const [granted, waitMs, refused] = answers[a] ?? [0, CONCURRENCY_RETRY_MS, 1];
      return granted === 1
        ? { granted: true, token: tokens[a] as string }
        : { granted: false, waitMs: Number(waitMs), refusedBy: refused === 1 ? 'concurrency' : 'rate' };
    });
  }

  async release(token: string, checks: readonly LimitCheck[]): Promise<void> {
    const ids = checks.filter((check) => check.kind === 'concurrency').map((check) => check.id);
    if (ids.length > 0) await this.#query('release_permits', RELEASE, [this.#prefix, token, ids]);
  }

  async #query<R extends object>(operation: string, sql: string, params: unknown[]): Promise<R[]> {
    if (this.#isClosed()) throw closedError('postgres', operation);
    try {
      const result = await this.#pool.query<R>({ name: statementName(this.#pool, `dw_idem_${operation}`), text: sql, values: params });
      return result.rows;
    } catch (err) {
      throw storeError('postgres', operation, err);
    }
  }
}
