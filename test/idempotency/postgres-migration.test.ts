import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { PostgresIdempotencyStore } from '../../src/idempotency/postgres.js';
import { waitFor } from '../fixtures/wait-for.js';

const DATABASE_URL = process.env.DATABASE_URL;

/** The table as durable-worker created it before failure histories (kept verbatim: the migration's input). */
const OLD_SCHEMA = `
CREATE TABLE IF NOT EXISTS durable_worker_idempotency (
  prefix     text        NOT NULL,
  key        text        NOT NULL,
  state      text        NOT NULL CHECK (state IN ('claimed', 'done')),
  owner      text,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (prefix, key)
);
CREATE INDEX IF NOT EXISTS durable_worker_idempotency_expires_at ON durable_worker_idempotency (expires_at);
`;

const T0 = Date.parse('2026-11-28T00:00:00Z');

describe.skipIf(DATABASE_URL === undefined)('postgres store: failure-history migration', () => {
  const url = DATABASE_URL as string;
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  /** A fresh schema (first on search_path) holding today's table with a few rows; the URL that sees it. */
  async function oldTable(): Promise<{ schemaUrl: string; query: (sql: string, values?: unknown[]) => Promise<Record<string, unknown>[]> }> {
    const pg = (await import('pg')).default;
    const admin = new pg.Pool({ connectionString: url, max: 1 });
    const schema = `dw_test_${randomUUID().replaceAll('-', '')}`;
    cleanups.push(async () => {
      await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await admin.end();
    });
    await admin.query(`CREATE SCHEMA ${schema}`);
    await admin.query(`SET search_path = ${schema}`);
    await admin.query(OLD_SCHEMA);
    await admin.query(
      `INSERT INTO durable_worker_idempotency (prefix, key, state, owner, expires_at) VALUES
        ('p', 'h:done', 'done', NULL, now() + interval '1 day'),
        ('p', 'h:claimed', 'claimed', 'worker-a', now() + interval '1 hour')`,
    );
    const schemaUrl = `${url}${url.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${schema}`)}`;
    return { schemaUrl, query: async (sql, values) => (await admin.query(sql, values)).rows };
  }

  it('adds the columns to a table created by the previous DDL, keeping its rows, when two stores open at once', async () => {
    const { schemaUrl, query } = await oldTable();
    const stores = await Promise.all(
      Array.from({ length: 2 }, () => PostgresIdempotencyStore.open({ url: schemaUrl, prefix: 'p', doneTtlMs: 86_400_000, poolSize: 1 })),
    );
    cleanups.push(async () => void (await Promise.all(stores.map((store) => store.close()))));
    const columns = (
      await query(`SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'durable_worker_idempotency'`)
    ).map((row) => row.column_name);
    expect(columns).toEqual(expect.arrayContaining(['failures', 'retry_at', 'first_failed_at', 'last_failed_at', 'failures_expire_at']));
    expect(await query(`SELECT key, state, owner, failures FROM durable_worker_idempotency ORDER BY key`)).toEqual([
      { key: 'h:claimed', state: 'claimed', owner: 'worker-a', failures: 0 },
      { key: 'h:done', state: 'done', owner: null, failures: 0 },
    ]);
    const [first, second] = stores as [PostgresIdempotencyStore, PostgresIdempotencyStore];
    expect(await first.claim(['h:done', 'h:claimed', 'h:new'], 'worker-b', 30_000)).toEqual({ states: ['done', 'busy', 'new'], failures: undefined });
    expect(await second.recordFailures([{ key: 'h:claimed', failedAtMs: T0, retryAtMs: T0 + 1_000 }], 'worker-a')).toEqual([1]);
    expect((await first.claim(['h:claimed'], 'worker-b', 30_000)).failures).toEqual([
      { failures: 1, retryAtMs: T0 + 1_000, firstFailedAtMs: T0, lastFailedAtMs: T0 },
    ]);

    // Opening an up-to-date table again changes nothing.
    const third = await PostgresIdempotencyStore.open({ url: schemaUrl, prefix: 'p', doneTtlMs: 86_400_000, poolSize: 1 });
    await third.close();
    expect(await query(`SELECT count(*)::int AS n FROM durable_worker_idempotency`)).toEqual([{ n: 3 }]);
  });

  it('the sweep keeps a row whose claim expired while its failure history is live, and deletes it once that expires', async () => {
    const { schemaUrl, query } = await oldTable();
    const store = await PostgresIdempotencyStore.open({ url: schemaUrl, prefix: 'p', doneTtlMs: 1_000, poolSize: 1 });
    cleanups.push(() => store.close());
    await store.claim(['h:failing', 'h:plain'], 'worker-a', 100);
    await store.recordFailures([{ key: 'h:failing', failedAtMs: T0, retryAtMs: T0 }], 'worker-a');
    const keys = async () =>
      (await query(`SELECT key FROM durable_worker_idempotency WHERE prefix = 'p' AND key IN ('h:failing', 'h:plain') ORDER BY key`)).map((row) => row.key);
    // The plain claim's expiry passes first; the history lives on for the done TTL.
    const swept = async () => {
      await store.deleteExpired();
      return keys();
    };
    const left = await waitFor(
      'the expired plain claim to be swept',
      async () => {
        const rows = await swept();
        return rows.includes('h:plain') ? undefined : rows;
      },
      10_000,
    );
    expect(left).toEqual(['h:failing']);
    expect((await store.claim(['h:failing'], 'worker-b', 30_000)).failures?.[0]?.failures).toBe(1);
    await store.release(['h:failing'], 'worker-b');
    await waitFor('the expired history to be swept', async () => (await swept()).length === 0, 10_000);
  });
});
