import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createIdempotencyStore } from '../../src/idempotency/index.js';
import { PostgresIdempotencyStore } from '../../src/idempotency/postgres.js';
import { waitFor } from '../fixtures/wait-for.js';
import { underCi } from '../fixtures/ci.js';
import { storeContract } from './contract.js';
import { freePort, privatePostgresUnavailable, startPrivatePostgres } from './private-servers.js';

const DATABASE_URL = process.env.DATABASE_URL;

describe('postgres store environment', () => {
  // CI must exercise the real adapter: a missing variable fails there instead of skipping quietly.
  it.runIf(underCi())('has DATABASE_URL in CI', () => {
    expect(DATABASE_URL, 'DATABASE_URL must be set in CI (eval "$(bash .ci/services.sh)")').toBeTruthy();
  });
  if (DATABASE_URL === undefined) console.warn('[idempotency] postgres suites skipped: DATABASE_URL is not set');
});

describe.skipIf(DATABASE_URL === undefined)('postgres store', () => {
  const url = DATABASE_URL as string;
  const unavailable = privatePostgresUnavailable();
  // Under CI the restart test runs whatever is installed: a missing server binary fails it.
  const runRestart = unavailable === undefined || underCi();
  if (!runRestart) console.warn(`[idempotency] postgres restart test skipped: ${unavailable}`);
  storeContract('postgres', (options) => createIdempotencyStore(url, { ...options, poolSize: 2 }), {
    shared: true,
    ...(runRestart ? { privateServer: () => startPrivatePostgres((serverUrl) => (options) => createIdempotencyStore(serverUrl, options)) } : {}),
  });

  it('starts safely when several workers create the table at once', async () => {
    const pg = (await import('pg')).default;
    const admin = new pg.Pool({ connectionString: url, max: 1 });
    const schema = `dw_test_${randomUUID().replaceAll('-', '')}`;
    try {
      await admin.query(`CREATE SCHEMA ${schema}`);
      // A fresh schema (first on search_path) so the table really is created here, five times at once.
      const schemaUrl = `${url}${url.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${schema}`)}`;
      const stores = await Promise.all(
        Array.from({ length: 5 }, () => PostgresIdempotencyStore.open({ url: schemaUrl, prefix: 'p', doneTtlMs: 60_000, poolSize: 1 })),
      );
      const created = await admin.query('SELECT tablename FROM pg_tables WHERE schemaname = $1 ORDER BY tablename', [schema]);
      expect(created.rows.map((row) => row.tablename)).toEqual([
        'durable_worker_deferred',
        'durable_worker_idempotency',
        'durable_worker_limit_permits',
        'durable_worker_limit_starts',
      ]);
      expect((await stores[0]!.claim(['h:1'], 'a', 1_000)).states).toEqual(['new']);
      expect((await stores[1]!.claim(['h:1'], 'b', 1_000)).states).toEqual(['busy']);
      await Promise.all(stores.map((store) => store.close()));
    } finally {
      await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await admin.end();
    }
  });

  it('deletes expired claims and done marks in its periodic sweep, and keeps live rows', async () => {
    const prefix = `test-${randomUUID()}`;
    const store = await PostgresIdempotencyStore.open({ url, prefix, doneTtlMs: 300 });
    const pg = (await import('pg')).default;
    const probe = new pg.Pool({ connectionString: url, max: 1 });
    const rows = async () => (await probe.query('SELECT key FROM durable_worker_idempotency WHERE prefix = $1 ORDER BY key', [prefix])).rows.map((r) => r.key);
    try {
      await store.claim(['h:short'], 'a', 300);
      await store.claim(['h:long'], 'a', 60_000);
      await store.markDone(['h:done']);
      expect(await rows()).toEqual(['h:done', 'h:long', 'h:short']);
      let remaining: string[] = [];
      await waitFor(
        'the expired rows to be swept',
        async () => {
          await store.deleteExpired();
          remaining = await rows();
          return remaining.length === 1;
        },
        10_000,
      );
      expect(remaining).toEqual(['h:long']);
    } finally {
      await probe.end();
      await store.close();
    }
  });

  it('fails to open with DW_ERR_STORE, without the password, when nothing listens', async () => {
    const port = await freePort();
    const failure = await createIdempotencyStore(`postgres://app:s3cret@127.0.0.1:${port}/app`, { prefix: 'p', doneTtlMs: 1_000 }).then(
      () => undefined,
      (err: unknown) => err as Error & { code?: string },
    );
    expect(failure?.code).toBe('DW_ERR_STORE');
    expect(failure?.message).toContain(`127.0.0.1:${port}`);
    expect(failure?.message).not.toContain('s3cret');
  });
});

/** The same database through PgBouncer in transaction pooling (`.ci/services.sh`; `?pool_mode=transaction`). */
const PGBOUNCER_URL = process.env.PGBOUNCER_URL;

describe('poolTarget', () => {
  it('takes pool_mode out of the URL, saying whether it is transaction pooling; refuses another value', async () => {
    const { poolTarget } = await import('../../src/idempotency/postgres-pool.js');
    expect(poolTarget('postgres://a:b@h:6432/db?pool_mode=transaction&sslmode=disable')).toEqual({
      url: 'postgres://a:b@h:6432/db?sslmode=disable',
      transactionPooled: true,
    });
    expect(poolTarget('postgres://a:b@h/db?pool_mode=session')).toEqual({ url: 'postgres://a:b@h/db', transactionPooled: false });
    expect(poolTarget('postgres://a:b@h/db')).toEqual({ url: 'postgres://a:b@h/db', transactionPooled: false });
    expect(() => poolTarget('postgres://h/db?pool_mode=statement')).toThrow(/pool_mode must be transaction or session \(got statement\)/);
  });
});

describe.skipIf(PGBOUNCER_URL === undefined)('postgres store through PgBouncer (transaction pooling)', () => {
  // No startup parameter and no named statement: the contract holds with the pooler in between.
  storeContract('postgres via pgbouncer', (options) => createIdempotencyStore(PGBOUNCER_URL as string, { ...options, poolSize: 2 }), { shared: true });
});
