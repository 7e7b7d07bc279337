import type { SqliteDatabase } from '../sqlite/index.js';
import type { DeferredReason, DeferredRun, DeferredRuns, DeferredStats } from './deferred.js';
import { distinctRuns } from './deferred-batch.js';
import { storeError } from './store-error.js';

const TABLE = 'durable_worker_deferred';

/**
 * Deferred runs, one row per key. `head` is 1 on the first run of its chain
 * (lowest sequence: `length(sequence), sequence` is stream order for decimal strings), kept by
 * `defer` and `remove` in their transaction, so `due` reads the heads alone through the partial
 * index. `chain` (`<handler>\0<subject>`) starts with its handler, so ordering by chain orders by
 * handler first, and one handler's chains are a range of the chain index.
 */
export const DEFERRED_SCHEMA = `
CREATE TABLE IF NOT EXISTS ${TABLE} (
  prefix_id   INTEGER NOT NULL,
  key         TEXT    NOT NULL,
  handler     TEXT    NOT NULL,
  chain       TEXT    NOT NULL,
  sequence    TEXT    NOT NULL,
  event       TEXT    NOT NULL,
  retry_at    INTEGER NOT NULL,
  deferred_at INTEGER NOT NULL,
  reason      TEXT    NOT NULL,
  head        INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (prefix_id, key)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS ${TABLE}_chain ON ${TABLE} (prefix_id, chain, length(sequence), sequence);
CREATE INDEX IF NOT EXISTS ${TABLE}_due ON ${TABLE} (prefix_id, retry_at) WHERE head = 1;
`;

/** What the deferred runs need of the store they live in. */
export interface SqliteDeferredHost {
  /**
   * Before a write: throws when the store is closed, waits while a background checkpoint holds the
   * write lock, and commits the done marks the store holds back (a done key must be seen).
   */
  beforeWrite(operation: string): Promise<void>;
  /** Throws when the store is closed. */
  assertOpen(operation: string): void;
  /** Rows written, for the store's checkpoint count. */
  wrote(rows: number): void;
  /** The store's clock, ms: a done mark counts until it expires. */
  now(): number;
}

interface RunRow {
  key: string;
  handler: string;
  chain_bytes: Uint8Array;
  sequence: string;
  event: string;
  retry_at: number;
  deferred_at: number;
  reason: string;
}

// A chain holds a NUL, and node:sqlite on Node 22 reads TEXT up to the first NUL: chains are read as bytes.
const COLUMNS = 'key, handler, chain, sequence, event, retry_at, deferred_at, reason';
const READ_COLUMNS = COLUMNS.replace('chain', 'CAST(chain AS BLOB) AS chain_bytes');
const chainText = (bytes: Uint8Array): string => Buffer.from(bytes).toString('utf8');
const CHAIN_ORDER = 'chain, length(sequence), sequence';

/**
 * Deferred runs in the SQLite store's file. Writes run in IMMEDIATE transactions, as the store's
 * do (sqlite.ts says why); every operation is one transaction or one statement.
 */
export class SqliteDeferredRuns implements DeferredRuns {
  readonly #host: SqliteDeferredHost;
  readonly #deferTx: (runs: readonly DeferredRun[], owner: string, nowMs: number) => number;
  readonly #removeTx: (keys: readonly string[]) => number;
  readonly #hasChain: (chain: string) => boolean;
  readonly #due: (nowMs: number, limit: number, skip: string) => RunRow[];
  readonly #nextDue: () => number | null | undefined;
  readonly #reschedule: (key: string, retryAtMs: number) => boolean;
  readonly #list: (handler: string | undefined, limit: number) => RunRow[];
  readonly #get: (key: string) => RunRow | undefined;
  readonly #stats: () => Array<{ handler: string; count: number; oldest: number }>;

  constructor(db: SqliteDatabase, prefixId: number, host: SqliteDeferredHost) {
    this.#host = host;
    const doneUntil = db.prepare<[number, string], { expires_at: number }>('SELECT expires_at FROM durable_worker_done WHERE prefix_id = ? AND key = ?');
    const deleteOwnClaim = db.prepare<[number, string, string], never>('DELETE FROM durable_worker_claims WHERE prefix_id = ? AND key = ? AND owner = ?');
    const upsert = db.prepare<[number, string, string, string, string, string, number, number, string], never>(
      `INSERT INTO ${TABLE} (prefix_id, ${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (prefix_id, key) DO UPDATE SET retry_at = excluded.retry_at, reason = excluded.reason`,
    );
    const chainOfKey = db.prepare<[number, string], { chain_bytes: Uint8Array }>(
      `SELECT CAST(chain AS BLOB) AS chain_bytes FROM ${TABLE} WHERE prefix_id = ? AND key = ?`,
    );
    const deleteRun = db.prepare<[number, string], never>(`DELETE FROM ${TABLE} WHERE prefix_id = ? AND key = ?`);
    const clearHead = db.prepare<[number, string], never>(`UPDATE ${TABLE} SET head = 0 WHERE prefix_id = ? AND chain = ? AND head = 1`);
    const setHead = db.prepare<[number, number, string], never>(
      `UPDATE ${TABLE} SET head = 1 WHERE prefix_id = ? AND key =
         (SELECT key FROM ${TABLE} WHERE prefix_id = ? AND chain = ? ORDER BY ${CHAIN_ORDER} LIMIT 1)`,
    );
    const anyOfChain = db.prepare<[number, string], { one: number }>(`SELECT 1 AS one FROM ${TABLE} WHERE prefix_id = ? AND chain = ? LIMIT 1`);
    // Skipped handlers as a JSON array: one statement whatever their number (names hold no NUL).
    const due = db.prepare<[number, number, string, number], RunRow>(
      `SELECT ${READ_COLUMNS} FROM ${TABLE} WHERE prefix_id = ? AND head = 1 AND retry_at <= ?
         AND handler NOT IN (SELECT value FROM json_each(?))
       ORDER BY retry_at, chain LIMIT ?`,
    );
    const nextDue = db.prepare<[number], { at: number | null }>(`SELECT min(retry_at) AS at FROM ${TABLE} WHERE prefix_id = ? AND head = 1`);
    const reschedule = db.prepare<[number, number, string], never>(`UPDATE ${TABLE} SET retry_at = ? WHERE prefix_id = ? AND key = ?`);
    const listAll = db.prepare<[number, number], RunRow>(`SELECT ${READ_COLUMNS} FROM ${TABLE} WHERE prefix_id = ? ORDER BY ${CHAIN_ORDER} LIMIT ?`);
    // A handler's chains are the range [handler\0, handler\x01): the chain index serves it in order.
    const listOf = db.prepare<[number, string, string, number], RunRow>(
      `SELECT ${READ_COLUMNS} FROM ${TABLE} WHERE prefix_id = ? AND chain >= ? AND chain < ? ORDER BY ${CHAIN_ORDER} LIMIT ?`,
    );
    const get = db.prepare<[number, string], RunRow>(`SELECT ${READ_COLUMNS} FROM ${TABLE} WHERE prefix_id = ? AND key = ?`);
    const stats = db.prepare<[number], { handler: string; count: number; oldest: number }>(
      `SELECT handler, count(*) AS count, min(deferred_at) AS oldest FROM ${TABLE} WHERE prefix_id = ? GROUP BY handler`,
    );

    const promoteHeads = (chains: Iterable<string>) => {
      let written = 0;
      for (const chain of chains) {
        written += Number(clearHead.run(prefixId, chain).changes);
        written += Number(setHead.run(prefixId, prefixId, chain).changes);
      }
      return written;
    };
    this.#deferTx = db.transaction((runs: readonly DeferredRun[], owner: string, nowMs: number) => {
      const chains = new Set<string>();
      for (const run of runs) {
        deleteOwnClaim.run(prefixId, run.key, owner);
        const done = doneUntil.get(prefixId, run.key);
        if (done !== undefined && done.expires_at > nowMs) continue;
        upsert.run(prefixId, run.key, run.handler, run.chain, run.sequence, JSON.stringify(run.event), run.retryAtMs, run.deferredAtMs, run.reason);
        chains.add(run.chain);
      }
      return 2 * runs.length + promoteHeads(chains);
    }, 'immediate');
    this.#removeTx = db.transaction((keys: readonly string[]) => {
      const chains = new Set<string>();
      for (const key of keys) {
        const row = chainOfKey.get(prefixId, key);
        if (row === undefined) continue;
        deleteRun.run(prefixId, key);
        chains.add(chainText(row.chain_bytes));
      }
      return keys.length + promoteHeads(chains);
    }, 'immediate');
    this.#hasChain = (chain) => anyOfChain.get(prefixId, chain) !== undefined;
    this.#due = (nowMs, limit, skip) => due.all(prefixId, nowMs, skip, limit);
    this.#nextDue = () => nextDue.get(prefixId)?.at;
    this.#reschedule = (key, retryAtMs) => Number(reschedule.run(retryAtMs, prefixId, key).changes) > 0;
    this.#list = (handler, limit) =>
      handler === undefined ? listAll.all(prefixId, limit) : listOf.all(prefixId, `${handler}\u0000`, `${handler}\u0001`, limit);
    this.#get = (key) => get.get(prefixId, key);
    this.#stats = () => stats.all(prefixId);
  }

  async defer(runs: readonly DeferredRun[], owner: string): Promise<void> {
    if (runs.length === 0) return;
    await this.#host.beforeWrite('defer');
    const distinct = distinctRuns(runs);
    this.#write('defer', () => this.#deferTx(distinct, owner, this.#host.now()));
  }

  async chainsWithRuns(chains: readonly string[]): Promise<Set<string>> {
    return this.#read('chainsWithRuns', () => new Set(chains.filter((chain) => this.#hasChain(chain))));
  }

  async due(nowMs: number, limit: number, skipHandlers?: ReadonlySet<string>): Promise<DeferredRun[]> {
    if (limit <= 0) return [];
    const skip = JSON.stringify(skipHandlers === undefined ? [] : [...skipHandlers]);
    return this.#read('due', () => this.#due(nowMs, limit, skip).map(toRun));
  }

  async nextDueAtMs(): Promise<number | undefined> {
    return this.#read('nextDueAtMs', () => this.#nextDue() ?? undefined);
  }

  async remove(keys: readonly string[]): Promise<void> {
    if (keys.length === 0) return;
    await this.#host.beforeWrite('remove');
    this.#write('remove', () => this.#removeTx(keys));
  }

  async reschedule(key: string, retryAtMs: number): Promise<boolean> {
    await this.#host.beforeWrite('reschedule');
    let found = false;
    this.#write('reschedule', () => {
      found = this.#reschedule(key, retryAtMs);
      return 1;
    });
    return found;
  }

  async list(options: { handler?: string; limit: number }): Promise<DeferredRun[]> {
    if (options.limit <= 0) return [];
    return this.#read('list', () => this.#list(options.handler, options.limit).map(toRun));
  }

  async get(key: string): Promise<DeferredRun | undefined> {
    return this.#read('get', () => {
      const row = this.#get(key);
      return row === undefined ? undefined : toRun(row);
    });
  }

  async stats(): Promise<Map<string, DeferredStats>> {
    return this.#read('stats', () => new Map(this.#stats().map((row) => [row.handler, { count: row.count, oldestDeferredAtMs: row.oldest }])));
  }

  #write(operation: string, write: () => number): void {
    try {
      this.#host.wrote(write());
    } catch (err) {
      throw storeError('sqlite', operation, err);
    }
  }

  #read<T>(operation: string, read: () => T): T {
    this.#host.assertOpen(operation);
    try {
      return read();
    } catch (err) {
      throw storeError('sqlite', operation, err);
    }
  }
}

function toRun(row: RunRow): DeferredRun {
  return {
    key: row.key,
    handler: row.handler,
    chain: chainText(row.chain_bytes),
    sequence: row.sequence,
    event: JSON.parse(row.event) as DeferredRun['event'],
    retryAtMs: row.retry_at,
    deferredAtMs: row.deferred_at,
    reason: row.reason as DeferredReason,
  };
}
