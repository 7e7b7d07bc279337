/**
 * Idempotency-store throughput: claims and done marks per second, per adapter, in batches as the
 * worker sends them (one call per pulled batch, several batches in flight).
 *
 *   node --import tsx bench/store/claims.ts [--batches 400] [--batch-size 100] [--in-flight 8] [--only redis,postgres]
 *
 * Redis and PostgreSQL run when REDIS_URL / DATABASE_URL are set (`eval "$(bash .ci/services.sh)"`).
 * Only 127.0.0.1 servers are meant as targets. Each run uses its own prefix and deletes its rows.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createIdempotencyStore } from '../../src/idempotency/index.js';
import type { IdempotencyStore } from '../../src/idempotency/store.js';

const { values } = parseArgs({
  options: {
    batches: { type: 'string', default: '400' },
    'batch-size': { type: 'string', default: '100' },
    'in-flight': { type: 'string', default: '8' },
    only: { type: 'string' },
  },
});
const batches = Number(values.batches);
const batchSize = Number(values['batch-size']);
const inFlight = Number(values['in-flight']);
const only = values.only?.split(',');

/** Runs `work(i)` for i < count with at most `inFlight` calls pending; returns ids per second. */
async function measure(count: number, work: (i: number) => Promise<unknown>): Promise<number> {
  let next = 0;
  const startedAt = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < count) await work(next++);
    }),
  );
  const seconds = Number(process.hrtime.bigint() - startedAt) / 1e9;
  return (count * batchSize) / seconds;
}

interface Row {
  adapter: string;
  claimNew: number;
  markDone: number;
  claimDone: number;
}

async function bench(adapter: string, store: IdempotencyStore): Promise<Row> {
  const runId = randomUUID().slice(0, 8);
  const batchKeys = Array.from({ length: batches }, (_, b) =>
    Array.from({ length: batchSize }, (_, i) => `bench/handler:${runId}-${b}-${i}`),
  );
  // Warm-up: connections, prepared plans, script cache.
  await store.claim(['bench/warmup:1'], 'warmup', 1_000);
  await store.markDone(['bench/warmup:1']);

  const claimNew = await measure(batches, async (b) => {
    const states = await store.claim(batchKeys[b]!, `worker-${b % inFlight}`, 60_000);
    if (states[0] !== 'new') throw new Error(`${adapter}: expected new, got ${states[0]}`);
  });
  const markDone = await measure(batches, (b) => store.markDone(batchKeys[b]!));
  const claimDone = await measure(batches, async (b) => {
    const states = await store.claim(batchKeys[b]!, 'worker-late', 60_000);
    if (states[0] !== 'done') throw new Error(`${adapter}: expected done, got ${states[0]}`);
  });
  return { adapter, claimNew, markDone, claimDone };
}

async function cleanupPostgres(url: string, prefix: string): Promise<void> {
  const pg = (await import('pg')).default;
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  await pool.query('DELETE FROM durable_worker_idempotency WHERE prefix = $1', [prefix]);
  await pool.end();
}

async function cleanupRedis(url: string, prefix: string): Promise<void> {
  const { createClient } = await import('redis');
  const client = createClient({ url });
  await client.connect();
  const pattern = `dw:idem:${prefix.length}:{${prefix}}:*`;
  for await (const keys of client.scanIterator({ MATCH: pattern, COUNT: 1_000 })) {
    if (keys.length > 0) await client.unlink(keys);
  }
  await client.close();
}

const dir = mkdtempSync(join(tmpdir(), 'dw-bench-store-'));
const prefix = `bench-${randomUUID()}`;
const options = { prefix, doneTtlMs: 3_600_000, poolSize: Number(process.env.BENCH_POOL_SIZE ?? 4) };
const targets: Array<{ name: string; url: string; cleanup?: () => Promise<void> }> = [
  { name: 'memory', url: 'memory' },
  { name: 'sqlite', url: `sqlite:${join(dir, 'bench.sqlite')}` },
];
if (process.env.REDIS_URL) targets.push({ name: 'redis', url: process.env.REDIS_URL, cleanup: () => cleanupRedis(process.env.REDIS_URL!, prefix) });
else console.error('redis skipped: REDIS_URL is not set');
if (process.env.DATABASE_URL) {
  targets.push({ name: 'postgres', url: process.env.DATABASE_URL, cleanup: () => cleanupPostgres(process.env.DATABASE_URL!, prefix) });
} else console.error('postgres skipped: DATABASE_URL is not set');

const rows: Row[] = [];
try {
  for (const target of targets) {
    if (only !== undefined && !only.includes(target.name)) continue;
    const store = await createIdempotencyStore(target.url, options);
    try {
      rows.push(await bench(target.name, store));
    } finally {
      await store.close();
      await target.cleanup?.();
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}

const fmt = (n: number) => Math.round(n).toLocaleString('en-US').padStart(12);
console.log(`batches of ${batchSize} keys, ${inFlight} in flight, ${batches * batchSize} event ids per phase (node ${process.version})`);
console.log(`${'adapter'.padEnd(10)}${'claim new/s'.padStart(12)}${'mark done/s'.padStart(12)}${'claim dup/s'.padStart(12)}`);
for (const row of rows) console.log(`${row.adapter.padEnd(10)}${fmt(row.claimNew)}${fmt(row.markDone)}${fmt(row.claimDone)}`);
