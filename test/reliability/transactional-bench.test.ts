import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatResults } from '../../bench/transactional/report.js';
import { runOnce, VARIANTS, type RunResult } from '../../bench/transactional/run.js';
import { EmulatorChild } from '../../bench/worker/emulator.js';

/**
 * bench/transactional on a tiny size, so that the benchmark keeps working: each of its four handlers
 * in a fresh `durable-worker run` (built dist/) against the emulator in another process and a real
 * PostgreSQL, and its check that every event's row was written exactly once. The figures come from
 * `npm run bench:transactional` (docs/benchmarks.md, "Transactional handlers").
 */
const DATABASE_URL = process.env.DATABASE_URL;
if (DATABASE_URL === undefined) console.warn('[reliability] transactional benchmark smoke test skipped: DATABASE_URL is not set');

describe.skipIf(DATABASE_URL === undefined)('transactional benchmark (bench/transactional, small size)', () => {
  let em: EmulatorChild;
  let db: pg.Pool;
  let scratch: string;
  beforeAll(async () => {
    em = await EmulatorChild.start();
    db = new pg.Pool({ connectionString: DATABASE_URL, max: 2 });
    scratch = mkdtempSync(join(tmpdir(), 'dw-tx-bench-test-'));
  });
  afterAll(async () => {
    await db?.end();
    await em?.stop();
    rmSync(scratch, { recursive: true, force: true });
  });

  it('each handler drains 300 events over 50 subjects, every event written once, with its CPU and connections measured', async () => {
    const results: RunResult[] = [];
    for (const variant of VARIANTS) {
      const name = `smoke_${variant.replace('-', '_')}_${process.pid}`;
      results.push(await runOnce({ em, db, databaseUrl: DATABASE_URL!, variant, isolation: 'none', events: 300, maxInProgress: 64, name, scratch }));
    }
    const text = formatResults(results);
    for (const r of results) {
      expect(r.rows, text).toBe(300);
      expect(r.writes, text).toBe(300);
      expect(r.eventsPerSecond, text).toBeGreaterThan(0);
      expect(r.cpuUsPerEvent, text).toBeGreaterThan(0);
      // Every variant writes its done marks through the idempotency store's pool.
      expect(r.maxConnectionsByName['durable-worker idempotency'], text).toBeGreaterThan(0);
    }
    // Only the transactional handlers open transactions of their own. A batch of them is over in a few
    // round trips, shorter than the connection sampler's period, so only the per-event one is sure to be seen.
    for (const r of results) if (!r.variant.startsWith('tx')) expect(r.maxConnectionsByName['durable-worker transactional handler'], text).toBeUndefined();
    expect(results.find((r) => r.variant === 'tx')?.maxConnectionsByName['durable-worker transactional handler'], text).toBeGreaterThan(0);
    // The tables and done marks of the runs are gone.
    const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM durable_worker_idempotency WHERE prefix LIKE 'bench-tx-smoke\\_%'`);
    expect(rows[0]!.n).toBe(0);
  }, 120_000);
});
