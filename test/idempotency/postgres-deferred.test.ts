import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { PostgresIdempotencyStore } from '../../src/idempotency/postgres.js';
import { underCi } from '../fixtures/ci.js';
import { deferredContract, deferredRun } from './deferred-contract.js';

const DATABASE_URL = process.env.DATABASE_URL;

describe('postgres deferred runs environment', () => {
  // CI must exercise the real adapter: a missing variable fails there instead of skipping quietly.
  it.runIf(underCi())('has DATABASE_URL in CI', () => {
    expect(DATABASE_URL, 'DATABASE_URL must be set in CI (eval "$(bash .ci/services.sh)")').toBeTruthy();
  });
});

describe.skipIf(DATABASE_URL === undefined)('postgres deferred runs', () => {
  const url = DATABASE_URL as string;
  deferredContract('postgres', async (prefix) => {
    const store = await PostgresIdempotencyStore.open({ url, prefix, doneTtlMs: 86_400_000, poolSize: 2 });
    return { store, deferred: store.deferred };
  });

  it('keeps one head per chain when several connections defer into it and remove from it at once', async () => {
    const prefix = `test-${randomUUID()}`;
    const stores = await Promise.all(
      Array.from({ length: 4 }, () => PostgresIdempotencyStore.open({ url, prefix, doneTtlMs: 86_400_000, poolSize: 2 })),
    );
    try {
      const runs = Array.from({ length: 40 }, (_, i) => deferredRun('h', 'one-subject', String(100 + i), { retryAtMs: 0 }));
      // Each store defers every fourth run, one by one: the chain's head moves under concurrent writers.
      await Promise.all(
        stores.map(async (store, s) => {
          for (let i = s; i < runs.length; i += 4) await store.deferred.defer([runs[i]!], `w${s}`);
        }),
      );
      expect((await stores[0]!.deferred.due(1, 10)).map((run) => run.key)).toEqual([runs[0]!.key]);
      await Promise.all(stores.map((store, s) => store.deferred.remove(runs.filter((_, i) => i % 4 === s && i < 36).map((run) => run.key))));
      expect((await stores[1]!.deferred.due(1, 10)).map((run) => run.key)).toEqual([runs[36]!.key]);
      const pg = (await import('pg')).default;
      const probe = new pg.Pool({ connectionString: url, max: 1 });
      try {
        const heads = await probe.query('SELECT count(*)::int AS n FROM durable_worker_deferred WHERE prefix = $1 AND head', [prefix]);
        expect(heads.rows[0].n).toBe(1);
      } finally {
        await probe.end();
      }
    } finally {
      await Promise.all(stores.map((store) => store.close()));
    }
  });

  it('fails with DW_ERR_STORE once the store is closed', async () => {
    const store = await PostgresIdempotencyStore.open({ url, prefix: `test-${randomUUID()}`, doneTtlMs: 1_000, poolSize: 1 });
    await store.close();
    await expect(store.deferred.defer([deferredRun('h', 's', '1')], 'w')).rejects.toMatchObject({ code: 'DW_ERR_STORE' });
    await expect(store.deferred.due(0, 1)).rejects.toMatchObject({ code: 'DW_ERR_STORE' });
  });
});
