/**
 * Idempotency-store cost: claims, done marks and releases per adapter, in batches as the worker
 * sends them, reported as ids per second and as CPU µs per key.
 *
 *   node --import tsx bench/store/claims.ts [--batches 400] [--batch-size 100] [--in-flight 8]
 *     [--prefill 0] [--rounds 1] [--mark-group 0] [--only memory,sqlite,redis,postgres]
 *
 * - `--prefill N` first marks N random keys done (in calls of 5,000) and reopens the store, so the
 *   phases run against a file or table of realistic size (a worker keeps 7 days of done marks).
 * - `--rounds R` repeats the phases R times on the same store (fresh keys each round) and prints
 *   every round, so the spread is visible on a shared machine.
 * - `--mark-group G` marks done the way the worker does: one `markDone([key])` call per event, G
 *   events at a time (so a group commit holds G keys); 0 (default) sends one call per batch.
 *
 * Keys are `<handler>:<random UUID>` like real event ids: sequential ids would sit side by side in
 * a B-tree and hide the cost of random writes. CPU is `process.cpuUsage()` (all threads, user +
 * system); "main" is the main thread alone (Linux schedstat), i.e. the time the event loop is
 * blocked when the store spends CPU on another thread.
 *
 * Redis and PostgreSQL run when REDIS_URL / DATABASE_URL are set (`eval "$(bash .ci/services.sh)"`).
 * Only 127.0.0.1 servers are meant as targets. Each run uses its own prefix and deletes its rows.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { createIdempotencyStore } from '../../src/idempotency/index.js';
import type { IdempotencyStore } from '../../src/idempotency/store.js';

const { values } = parseArgs({
  options: {
    batches: { type: 'string', default: '400' },
    'batch-size': { type: 'string', default: '100' },
    'in-flight': { type: 'string', default: '8' },
    prefill: { type: 'string', default: '0' },
    rounds: { type: 'string', default: '1' },
    'mark-group': { type: 'string', default: '0' },
    only: { type: 'string' },
  },
});
const batches = Number(values.batches);
const batchSize = Number(values['batch-size']);
const inFlight = Number(values['in-flight']);
const prefillCount = Number(values.prefill);
const rounds = Number(values.rounds);
const markGroup = Number(values['mark-group']);
const only = values.only?.split(',');

const PHASES = ['claimNew', 'markDone', 'claimDone', 'release'] as const;
type Phase = (typeof PHASES)[number];

interface Figures {
  idsPerSecond: number;
  /** CPU µs per key, all threads. */
  cpuUs: number;
  /** CPU µs per key of the main thread; NaN where schedstat is unavailable. */
  mainUs: number;
  /** µs per key the event loop was busy (not idle): includes time blocked on I/O by a synchronous driver. */
  busyUs: number;
}

/** Nanoseconds the main thread has run on a CPU (Linux); undefined elsewhere. */
function mainThreadNs(): number | undefined {
  try {
    return Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')[0]);
  } catch {
    return undefined;
  }
}

/** Runs `work(i)` for i < count with at most `inFlight` calls pending; `keys` ids in all. */
async function measure(count: number, keys: number, work: (i: number) => Promise<unknown>): Promise<Figures> {
  let next = 0;
  const cpuBefore = process.cpuUsage();
  const mainBefore = mainThreadNs();
  const eluBefore = performance.eventLoopUtilization();
  const startedAt = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < count) await work(next++);
    }),
  );
  const seconds = Number(process.hrtime.bigint() - startedAt) / 1e9;
  const cpu = process.cpuUsage(cpuBefore);
  const mainAfter = mainThreadNs();
  const elu = performance.eventLoopUtilization(eluBefore);
  return {
    idsPerSecond: keys / seconds,
    cpuUs: (cpu.user + cpu.system) / keys,
    mainUs: mainBefore === undefined || mainAfter === undefined ? Number.NaN : (mainAfter - mainBefore) / 1e3 / keys,
    busyUs: (elu.active * 1e3) / keys,
  };
}

const randomKeys = (count: number, handler = 'orders/created') => Array.from({ length: count }, () => `${handler}:${randomUUID()}`);
const owner = (b: number) => `worker-${randomUUID().slice(0, 8)}:${randomUUID()}:${1 + (b % 3)}`;

async function prefill(store: IdempotencyStore, count: number): Promise<void> {
  for (let done = 0; done < count; done += 5_000) await store.markDone(randomKeys(Math.min(5_000, count - done)));
}

/** Marks a batch done: one call for the batch, or one call per key, `markGroup` keys at a time. */
async function markBatch(store: IdempotencyStore, keys: readonly string[]): Promise<void> {
  if (markGroup <= 0) return store.markDone(keys);
  for (let i = 0; i < keys.length; i += markGroup) await Promise.all(keys.slice(i, i + markGroup).map((key) => store.markDone([key])));
}

async function round(adapter: string, store: IdempotencyStore): Promise<Record<Phase, Figures>> {
  const keys = batches * batchSize;
  const batchKeys = Array.from({ length: batches }, () => randomKeys(batchSize));
  const owners = Array.from({ length: batches }, (_, b) => owner(b));
  const expect = (states: string[], want: string) => {
    if (states[0] !== want || states.at(-1) !== want) throw new Error(`${adapter}: expected ${want}, got ${states[0]}`);
  };
  const claimNew = await measure(batches, keys, async (b) => expect(await store.claim(batchKeys[b]!, owners[b]!, 60_000), 'new'));
  const markDone = await measure(batches, keys, (b) => markBatch(store, batchKeys[b]!));
  const claimDone = await measure(batches, keys, async (b) => expect(await store.claim(batchKeys[b]!, owners[b]!, 60_000), 'done'));
  // Release: fresh keys claimed outside the measurement, then released batch by batch.
  const released = Array.from({ length: batches }, () => randomKeys(batchSize));
  for (let b = 0; b < batches; b++) await store.claim(released[b]!, owners[b]!, 60_000);
  const release = await measure(batches, keys, (b) => store.release(released[b]!, owners[b]!));
  return { claimNew, markDone, claimDone, release };
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
// Shaped like the default `<tenant>:<destination>` prefix (~40 characters).
const prefix = `bench-${randomUUID().slice(0, 8)}:dest-${randomUUID()}`;
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

const results: Array<{ adapter: string; round: number; figures: Record<Phase, Figures> }> = [];
try {
  for (const target of targets) {
    if (only !== undefined && !only.includes(target.name)) continue;
    let store = await createIdempotencyStore(target.url, options);
    try {
      if (prefillCount > 0) {
        const startedAt = Date.now();
        await prefill(store, prefillCount);
        // Reopened like a restarted worker: the file is settled (WAL checkpointed) before the phases.
        await store.close();
        store = await createIdempotencyStore(target.url, options);
        console.error(`${target.name}: prefilled ${prefillCount.toLocaleString('en-US')} done marks in ${((Date.now() - startedAt) / 1e3).toFixed(1)} s`);
      }
      // Warm-up: connections, prepared plans, script cache.
      await store.claim(['bench/warmup:1'], 'warmup', 1_000);
      await store.markDone(['bench/warmup:1']);
      for (let r = 1; r <= rounds; r++) results.push({ adapter: target.name, round: r, figures: await round(target.name, store) });
    } finally {
      await store.close();
      await target.cleanup?.();
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}

const marks = markGroup > 0 ? `markDone per key, ${markGroup} at a time` : 'markDone per batch';
console.log(
  `batches of ${batchSize} keys, ${inFlight} in flight, ${batches * batchSize} event ids per phase, prefill ${prefillCount}, ${marks} (node ${process.version})`,
);
console.log('µs per key: CPU of all threads (user + system), CPU of the main thread, event loop busy (wall time not idle)');
const cell = (text: string, width = 11) => text.padStart(width);
console.log(`${'adapter'.padEnd(12)}${'phase'.padEnd(11)}${cell('ids/s', 12)}${cell('CPU µs')}${cell('main µs')}${cell('busy µs')}`);
const fixed = (n: number) => (Number.isNaN(n) ? '-' : n.toFixed(1));
for (const { adapter, round: r, figures } of results) {
  for (const phase of PHASES) {
    const f = figures[phase];
    const name = rounds > 1 ? `${adapter} #${r}` : adapter;
    console.log(`${name.padEnd(12)}${phase.padEnd(11)}${cell(Math.round(f.idsPerSecond).toLocaleString('en-US'), 12)}${cell(fixed(f.cpuUs))}${cell(fixed(f.mainUs))}${cell(fixed(f.busyUs))}`);
  }
}
