import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { PostgresIdempotencyStore } from '../../src/idempotency/postgres.js';
import { PROMOTE_HEADS } from '../../src/idempotency/postgres-deferred-sql.js';
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

  it("recomputes a chain's head through the chain index, not by sorting every run under the prefix", async () => {
    // 2,000 runs over 200 chains under a prefix the statistics do not know yet (a fresh deployment),
    // as the planner then sees it: it takes the prefix for a rare one.
    const prefix = `test-${randomUUID()}`;
    const store = await PostgresIdempotencyStore.open({ url, prefix, doneTtlMs: 86_400_000, poolSize: 2 });
    const pg = (await import('pg')).default;
    const probe = new pg.Pool({ connectionString: url, max: 1 });
    const other = await PostgresIdempotencyStore.open({ url, prefix: `${prefix}-other`, doneTtlMs: 86_400_000, poolSize: 2 });
    const runs = Array.from({ length: 2_000 }, (_, i) => deferredRun('h', `s-${i % 200}`, String(1_000 + i), { retryAtMs: 0 }));
    const others = Array.from({ length: 2_000 }, (_, i) => deferredRun('h', `s-${i % 200}`, String(1_000 + i), { retryAtMs: 0 }));
    try {
      // The statistics know another prefix's runs, not these: as for a deployment's fresh prefix.
      for (let i = 0; i < others.length; i += 500) await other.deferred.defer(others.slice(i, i + 500), 'w');
      await probe.query('ANALYZE durable_worker_deferred');
      for (let i = 0; i < runs.length; i += 500) await store.deferred.defer(runs.slice(i, i + 500), 'w');
      const chains = runs.slice(0, 5).map((run) => Buffer.from(run.chain, 'utf8').toString('hex'));
      const { rows } = await probe.query<{ 'QUERY PLAN': unknown }>(`EXPLAIN (FORMAT JSON) ${PROMOTE_HEADS}`, [prefix, chains]);
      const scans: { 'Index Cond'?: string; 'Recheck Cond'?: string }[] = [];
      const walk = (node: Record<string, unknown>): void => {
        // Its scans (the update's own node names the table too, without a condition).
        if (node['Relation Name'] === 'durable_worker_deferred' && String(node['Node Type']).endsWith('Scan')) scans.push(node);
        for (const child of (node.Plans as Record<string, unknown>[] | undefined) ?? []) walk(child);
      };
      walk((rows[0]!['QUERY PLAN'] as { Plan: Record<string, unknown> }[])[0]!.Plan);
      // Each chain's first run is one probe of the chain index; the rows to flip are read once at
      // most by the prefix alone (when the planner takes the prefix for a rare one). The plan that
      // read the prefix twice, sorting it for DISTINCT ON, stalled the store.
      const byChain = scans.filter((scan) => /\bchain = /.test(scan['Index Cond'] ?? scan['Recheck Cond'] ?? ''));
      expect(byChain.length, JSON.stringify(scans)).toBeGreaterThan(0);
      expect(scans.length - byChain.length, JSON.stringify(scans)).toBeLessThanOrEqual(1);
    } finally {
      await probe.end();
      await store.deferred.remove(runs.map((run) => run.key));
      await other.deferred.remove(others.map((run) => run.key));
      await Promise.all([store.close(), other.close()]);
    }
  });

  it('keeps one head per chain when several connections defer into it and remove from it at once', async () => {
    const prefix = `test-${randomUUID()}`;
    const stores = await Promise.all(Array.from({ length: 4 }, () => PostgresIdempotencyStore.open({ url, prefix, doneTtlMs: 86_400_000, poolSize: 2 })));
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
