import type { Pool, PoolClient } from 'pg';
import type { DeferredReason, DeferredRun, DeferredRuns, DeferredStats } from './deferred.js';
import { distinctRuns } from './deferred-batch.js';
import {
  CHAINS_WITH_RUNS,
  DEFER,
  DUE,
  GET,
  LIST,
  LIST_OF,
  LOCK_CHAINS,
  LOCK_CHAINS_OF_KEYS,
  NEXT_DUE,
  PROMOTE_HEADS,
  REMOVE,
  RESCHEDULE,
  STATS,
} from './postgres-deferred-sql.js';
import { closedError, distinctKeys, storeError } from './store-error.js';
import { statementName } from './postgres-pool.js';

interface RunRow {
  key: string;
  handler: string;
  chain: Buffer;
  sequence: string;
  event: string;
  retry_at_ms: number;
  deferred_at_ms: number;
  reason: string;
}

const hex = (chain: string) => Buffer.from(chain, 'utf8').toString('hex');

/**
 * Deferred runs in the PostgreSQL store's database (the table, and why it keeps a head flag:
 * postgres-deferred-sql.ts). `defer` and `remove` are one transaction each (lock the chains, write,
 * recompute the chains' heads); the others one statement.
 */
export class PostgresDeferredRuns implements DeferredRuns {
  readonly #pool: Pool;
  readonly #prefix: string;
  readonly #isClosed: () => boolean;

  constructor(pool: Pool, prefix: string, isClosed: () => boolean) {
    this.#pool = pool;
    this.#prefix = prefix;
    this.#isClosed = isClosed;
  }

  async defer(runs: readonly DeferredRun[], owner: string): Promise<void> {
    if (runs.length === 0) return;
    const distinct = distinctRuns(runs);
    const chains = [...new Set(distinct.map((run) => hex(run.chain)))];
    await this.#transaction('defer', async (query) => {
      await query('lock', LOCK_CHAINS, [this.#prefix, chains]);
      await query('defer', DEFER, [
        this.#prefix,
        distinct.map((run) => run.key),
        distinct.map((run) => run.handler),
        distinct.map((run) => hex(run.chain)),
        distinct.map((run) => run.sequence),
        distinct.map((run) => JSON.stringify(run.event)),
        distinct.map((run) => run.retryAtMs),
        distinct.map((run) => run.deferredAtMs),
        distinct.map((run) => run.reason),
        owner,
      ]);
      await query('promote', PROMOTE_HEADS, [this.#prefix, chains]);
    });
  }

  async chainsWithRuns(chains: readonly string[]): Promise<Set<string>> {
    if (chains.length === 0) return new Set();
    const byHex = new Map(chains.map((chain) => [hex(chain), chain]));
    const rows = await this.#query<{ chain: string }>('chains', CHAINS_WITH_RUNS, [this.#prefix, [...byHex.keys()]]);
    return new Set(rows.map((row) => byHex.get(row.chain) as string));
  }

  async due(nowMs: number, limit: number, skipHandlers?: ReadonlySet<string>): Promise<DeferredRun[]> {
    if (limit <= 0) return [];
    const rows = await this.#query<RunRow>('due', DUE, [this.#prefix, nowMs, [...(skipHandlers ?? [])], limit]);
    return rows.map(toRun);
  }

  async nextDueAtMs(): Promise<number | undefined> {
    const [row] = await this.#query<{ at: number | null }>('next_due', NEXT_DUE, [this.#prefix]);
    return row?.at ?? undefined;
  }

  async remove(keys: readonly string[]): Promise<void> {
    if (keys.length === 0) return;
    const unique = distinctKeys(keys);
    await this.#transaction('remove', async (query) => {
      await query('lock_keys', LOCK_CHAINS_OF_KEYS, [this.#prefix, unique]);
      const removed = await query<{ chain: string }>('remove', REMOVE, [this.#prefix, unique]);
      if (removed.length > 0) await query('promote', PROMOTE_HEADS, [this.#prefix, [...new Set(removed.map((row) => row.chain))]]);
    });
  }

  async reschedule(key: string, retryAtMs: number): Promise<boolean> {
    if (this.#isClosed()) throw closedError('postgres', 'reschedule');
    try {
      const result = await this.#pool.query({
        name: statementName(this.#pool, 'dw_defer_reschedule'),
        text: RESCHEDULE,
        values: [this.#prefix, key, retryAtMs],
      });
      return (result.rowCount ?? 0) > 0;
    } catch (err) {
      throw storeError('postgres', 'reschedule', err);
    }
  }

  async list(options: { handler?: string; limit: number }): Promise<DeferredRun[]> {
    if (options.limit <= 0) return [];
    const rows =
      options.handler === undefined
        ? await this.#query<RunRow>('list', LIST, [this.#prefix, options.limit])
        : await this.#query<RunRow>('list_of', LIST_OF, [
            this.#prefix,
            Buffer.from(`${options.handler}\u0000`, 'utf8'),
            Buffer.from(`${options.handler}\u0001`, 'utf8'),
            options.limit,
          ]);
    return rows.map(toRun);
  }

  async get(key: string): Promise<DeferredRun | undefined> {
    const [row] = await this.#query<RunRow>('get', GET, [this.#prefix, key]);
    return row === undefined ? undefined : toRun(row);
  }

  async stats(): Promise<Map<string, DeferredStats>> {
    const rows = await this.#query<{ handler: string; count: number; oldest: number }>('stats', STATS, [this.#prefix]);
    return new Map(rows.map((row) => [row.handler, { count: row.count, oldestDeferredAtMs: row.oldest }]));
  }

  async #query<R extends object>(operation: string, sql: string, params: unknown[]): Promise<R[]> {
    if (this.#isClosed()) throw closedError('postgres', operation);
    try {
      // Named, as the store's: each connection plans the statement once.
      return (await this.#pool.query<R>({ name: statementName(this.#pool, `dw_defer_${operation}`), text: sql, values: params })).rows;
    } catch (err) {
      throw storeError('postgres', operation, err);
    }
  }

  /** Runs `work` in one transaction on one connection; rolled back when it throws. */
  async #transaction(
    operation: string,
    work: (query: <R extends object>(name: string, sql: string, params: unknown[]) => Promise<R[]>) => Promise<void>,
  ): Promise<void> {
    if (this.#isClosed()) throw closedError('postgres', operation);
    let client: PoolClient | undefined;
    // A connection whose rollback failed too is discarded rather than handed to the next caller.
    let broken: Error | undefined;
    try {
      client = await this.#pool.connect();
      const on = client;
      await on.query('BEGIN');
      await work(
        async <R extends object>(name: string, sql: string, params: unknown[]) =>
          (await on.query<R>({ name: statementName(this.#pool, `dw_defer_${name}`), text: sql, values: params })).rows,
      );
      await on.query('COMMIT');
    } catch (err) {
      await client?.query('ROLLBACK').catch((rollbackErr: unknown) => {
        broken = rollbackErr instanceof Error ? rollbackErr : new Error(String(rollbackErr));
      });
      throw storeError('postgres', operation, err);
    } finally {
      client?.release(broken);
    }
  }
}

function toRun(row: RunRow): DeferredRun {
  return {
    key: row.key,
    handler: row.handler,
    chain: row.chain.toString('utf8'),
    sequence: row.sequence,
    event: JSON.parse(row.event) as DeferredRun['event'],
    retryAtMs: row.retry_at_ms,
    deferredAtMs: row.deferred_at_ms,
    reason: row.reason as DeferredReason,
  };
}
