import type { SqliteDatabase } from '../sqlite/index.js';
import type { ClaimState, FailureHistory } from './store.js';

interface FailureRow {
  failures: number;
  retry_at: number;
  first_failed_at: number;
  last_failed_at: number;
}

/** The SQLite store's statements on `durable_worker_failures` (sqlite-schema.ts), for one prefix. Run inside the store's transactions. */
export interface SqliteFailures {
  /** Whether the prefix has any history at all: one probe, so that batches without failures look up nothing more. */
  any(): boolean;
  /** The unexpired histories of the keys not done, by position; undefined when none has one. */
  historiesOf(keys: readonly string[], states: readonly ClaimState[], nowMs: number): (FailureHistory | undefined)[] | undefined;
  /** Counts one failed run; returns the new count. A history past its TTL starts over at 1, as if already swept. */
  record(key: string, failedAtMs: number, retryAtMs: number, expiresAtMs: number, nowMs: number): number;
  delete(key: string): void;
  /** Deletes up to `rows` expired histories; returns how many. */
  deleteExpired(nowMs: number, rows: number): number;
}

export function prepareFailures(db: SqliteDatabase, prefixId: number): SqliteFailures {
  const anyRow = db.prepare<[number], { one: number }>('SELECT 1 AS one FROM durable_worker_failures WHERE prefix_id = ? LIMIT 1');
  const historyOf = db.prepare<[number, string, number], FailureRow>(
    'SELECT failures, retry_at, first_failed_at, last_failed_at FROM durable_worker_failures WHERE prefix_id = ? AND key = ? AND expires_at > ?',
  );
  const count = db.prepare<[number, string, number, number, number, number, number, number], { failures: number }>(
    `INSERT INTO durable_worker_failures (prefix_id, key, failures, retry_at, first_failed_at, last_failed_at, expires_at)
     VALUES (?, ?, 1, ?, ?, ?, ?)
     ON CONFLICT (prefix_id, key) DO UPDATE SET
       failures        = CASE WHEN expires_at > ? THEN failures + 1 ELSE 1 END,
       first_failed_at = CASE WHEN expires_at > ? THEN first_failed_at ELSE excluded.first_failed_at END,
       retry_at = excluded.retry_at, last_failed_at = excluded.last_failed_at, expires_at = excluded.expires_at
     RETURNING failures`,
  );
  const remove = db.prepare<[number, string], never>('DELETE FROM durable_worker_failures WHERE prefix_id = ? AND key = ?');
  // No index on expires_at: few keys fail, a scan of the table is short.
  const removeExpired = db.prepare<[number, number], never>(
    `DELETE FROM durable_worker_failures WHERE (prefix_id, key) IN
       (SELECT prefix_id, key FROM durable_worker_failures WHERE expires_at <= ? LIMIT ?)`,
  );
  return {
    any: () => anyRow.get(prefixId) !== undefined,
    historiesOf(keys, states, nowMs) {
      let found: (FailureHistory | undefined)[] | undefined;
      for (let i = 0; i < keys.length; i++) {
        if (states[i] === 'done') continue;
        const row = historyOf.get(prefixId, keys[i] as string, nowMs);
        if (row === undefined) continue;
        found ??= new Array<FailureHistory | undefined>(keys.length);
        found[i] = { failures: row.failures, retryAtMs: row.retry_at, firstFailedAtMs: row.first_failed_at, lastFailedAtMs: row.last_failed_at };
      }
      return found;
    },
    record: (key, failedAtMs, retryAtMs, expiresAtMs, nowMs) =>
      (count.get(prefixId, key, retryAtMs, failedAtMs, failedAtMs, expiresAtMs, nowMs, nowMs) as { failures: number }).failures,
    delete: (key) => void remove.run(prefixId, key),
    deleteExpired: (nowMs, rows) => Number(removeExpired.run(nowMs, rows).changes),
  };
}
