/**
 * Idempotency-store cost: claims, done marks and releases per adapter, in batches as the worker
 * sends them, reported as ids per second and as CPU µs per key.
 *
 *   node --import tsx bench/store/claims.ts [--batches 400] [--batch-size 100] [--in-flight 8]
 *     [--prefill 0] [--rounds 1] [--mark-group 0] [--interleave] [--only memory,sqlite,redis,postgres]
 *
 * - `--prefill N` first marks N random keys done (in calls of 5,000) and reopens the store, so the
 *   phases run against a file or table of realistic size (a worker keeps 7 days of done marks).
 * - `--rounds R` repeats the phases R times on the same store (fresh keys each round) and prints
 *   every round, so the spread is visible on a shared machine.
 * - `--mark-group G` marks done the way the worker does: one `markDone([key])` call per event, G
 *   events at a time (so a group commit holds G keys); 0 (default) sends one call per batch.
 * - `--interleave` runs the operations batch by batch as the worker does (claim a batch, mark it
 *   done, claim an earlier batch again, claim and release another) instead of one phase after the
 *   other, and times each call; the store's tables then hold what a worker's would.
 * - `--sqlite-checkpoint-keys N` opens the SQLite store with `checkpointEveryKeys: N` (0: SQLite's
 *   own checkpoints on the main thread) instead of its default.
 *
 * Keys are `<handler>:<random UUID>` like real event ids: sequential ids would sit side by side in
 * a B-tree and hide the cost of random writes. Per phase: CPU µs per key while the calls ran
 * (`process.cpuUsage()`: all threads, user + system, so a background thread's work lands in
 * whichever call it overlaps) and "busy" µs per key, the wall time the event loop was not idle
 * during the calls (a synchronous driver blocks it on CPU, fsyncs and lock waits alike). Per round:
 * CPU µs per key operation over the whole round, for all threads and for the main thread alone
 * (Linux schedstat), and with `--interleave` the longest and 99th-percentile event-loop delay
 * (`monitorEventLoopDelay`): what the slowest calls (checkpoints, fsyncs) cost the rest of the
 * process. (Without it, a phase chains its synchronous calls through microtasks and the event loop
 * does not turn until the phase ends.)
 *
 * Redis and PostgreSQL run when REDIS_URL / DATABASE_URL are set (`eval "$(bash .ci/services.sh)"`).
 * Only 127.0.0.1 servers are meant as targets. Each run uses its own prefix and deletes its rows.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
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
    interleave: { type: 'boolean', default: false },
    'sqlite-checkpoint-keys': { type: 'string' },
    only: { type: 'string' },
  },
});
const batches = Number(values.batches);
const batchSize = Number(values['batch-size']);
const inFlight = Number(values['in-flight']);
const prefillCount = Number(values.prefill);
const rounds = Number(values.rounds);
const markGroup = Number(values['mark-group']);
const interleave = values.interleave;
const sqliteCheckpointKeys = values['sqlite-checkpoint-keys'];
const only = values.only?.split(',');

const PHASES = ['claimNew', 'markDone', 'claimDone', 'release'] as const;
type Phase = (typeof PHASES)[number];

interface Figures {
  idsPerSecond: number;
  /** CPU µs per key, all threads. */
  cpuUs: number;
  /** µs per key the event loop was busy (not idle): includes time blocked on I/O by a synchronous driver. */
  busyUs: number;
  /** The longest time the event loop was busy in one timed call (one phase when not interleaved), in ms. */
  maxBusyMs: number;
}

/**
 * Nanoseconds the main thread has run on a CPU (Linux); undefined elsewhere. The kernel updates the
 * figure at scheduler ticks, so it is read around a whole round, never around one call.
 */
function mainThreadNs(): number | undefined {
  try {
    return Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')[0]);
  } catch {
    return undefined;
  }
}

/** Accumulates the cost of the calls it times. */
class Meter {
  #keys = 0;
  #cpuUs = 0;
  #busyMs = 0;
  #maxBusyMs = 0;
  #wallNs = 0;

  async time(keys: number, work: () => Promise<unknown>): Promise<void> {
    const cpuBefore = process.cpuUsage();
    const eluBefore = performance.eventLoopUtilization();
    const startedAt = process.hrtime.bigint();
    await work();
    this.#wallNs += Number(process.hrtime.bigint() - startedAt);
    const cpu = process.cpuUsage(cpuBefore);
    const busyMs = performance.eventLoopUtilization(eluBefore).active;
    this.#busyMs += busyMs;
    this.#maxBusyMs = Math.max(this.#maxBusyMs, busyMs);
    this.#cpuUs += cpu.user + cpu.system;
    this.#keys += keys;
  }

  figures(): Figures {
    const keys = this.#keys;
    return { idsPerSecond: keys / (this.#wallNs / 1e9), cpuUs: this.#cpuUs / keys, busyUs: (this.#busyMs * 1e3) / keys, maxBusyMs: this.#maxBusyMs };
  }
}

/** Runs `work(i)` for i < count with at most `inFlight` calls pending, timed as one span. */
async function measure(count: number, keys: number, work: (i: number) => Promise<unknown>): Promise<Figures> {
  let next = 0;
  const meter = new Meter();
  await meter.time(keys, () =>
    Promise.all(
      Array.from({ length: inFlight }, async () => {
        while (next < count) await work(next++);
      }),
    ),
  );
  return meter.figures();
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

interface RoundResult {
  figures: Record<Phase, Figures>;
  /** CPU µs per key over the whole round (every operation, untimed ones included): all threads, main thread. */
  roundCpuUs: number;
  roundMainUs: number;
  /** Longest and 99th-percentile event-loop delay during the round, in ms. */
  stallMaxMs: number;
  stallP99Ms: number;
}

async function round(adapter: string, store: IdempotencyStore): Promise<RoundResult> {
  const keys = batches * batchSize;
  const batchKeys = Array.from({ length: batches }, () => randomKeys(batchSize));
  const released = Array.from({ length: batches }, () => randomKeys(batchSize));
  const owners = Array.from({ length: batches }, (_, b) => owner(b));
  const expect = ({ states }: { states: string[] }, want: string) => {
    if (states[0] !== want || states.at(-1) !== want) throw new Error(`${adapter}: expected ${want}, got ${states[0]}`);
  };
  const stalls = monitorEventLoopDelay({ resolution: 1 });
  stalls.enable();
  const cpuBefore = process.cpuUsage();
  const mainBefore = mainThreadNs();
  let figures: Record<Phase, Figures>;
  if (interleave) {
    // As the worker does it: claim a batch, mark its keys done, meet earlier ids again, release failures.
    const meters = { claimNew: new Meter(), markDone: new Meter(), claimDone: new Meter(), release: new Meter() };
    for (let b = 0; b < batches; b++) {
      const batch = batchKeys[b]!;
      await meters.claimNew.time(batchSize, async () => expect(await store.claim(batch, owners[b]!, 60_000), 'new'));
      await meters.markDone.time(batchSize, () => markBatch(store, batch));
      const earlier = batchKeys[Math.max(0, b - 10)]!;
      await meters.claimDone.time(batchSize, async () => expect(await store.claim(earlier, owners[b]!, 60_000), 'done'));
      await store.claim(released[b]!, owners[b]!, 60_000);
      await meters.release.time(batchSize, () => store.release(released[b]!, owners[b]!));
    }
    figures = {
      claimNew: meters.claimNew.figures(),
      markDone: meters.markDone.figures(),
      claimDone: meters.claimDone.figures(),
      release: meters.release.figures(),
    };
  } else {
    const claimNew = await measure(batches, keys, async (b) => expect(await store.claim(batchKeys[b]!, owners[b]!, 60_000), 'new'));
    const markDone = await measure(batches, keys, (b) => markBatch(store, batchKeys[b]!));
    const claimDone = await measure(batches, keys, async (b) => expect(await store.claim(batchKeys[b]!, owners[b]!, 60_000), 'done'));
    // Release: fresh keys claimed outside the measurement, then released batch by batch.
    for (let b = 0; b < batches; b++) await store.claim(released[b]!, owners[b]!, 60_000);
    const release = await measure(batches, keys, (b) => store.release(released[b]!, owners[b]!));
    figures = { claimNew, markDone, claimDone, release };
  }
  const cpu = process.cpuUsage(cpuBefore);
  const mainAfter = mainThreadNs();
  stalls.disable();
  // Keys touched in the round: claimed, marked, claimed again, claimed and released.
  const touched = batches * batchSize * 5;
  return {
    figures,
    roundCpuUs: (cpu.user + cpu.system) / touched,
    roundMainUs: mainBefore === undefined || mainAfter === undefined ? Number.NaN : (mainAfter - mainBefore) / 1e3 / touched,
    stallMaxMs: stalls.max / 1e6,
    stallP99Ms: stalls.percentile(99) / 1e6,
  };
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
/** The factory, or for SQLite with `--sqlite-checkpoint-keys` the adapter with that option. */
async function openStore(url: string): Promise<IdempotencyStore> {
  if (!url.startsWith('sqlite:') || sqliteCheckpointKeys === undefined) return createIdempotencyStore(url, options);
  const { SqliteIdempotencyStore } = await import('../../src/idempotency/sqlite.js');
  return SqliteIdempotencyStore.open({
    ...options,
    path: url.slice('sqlite:'.length),
    ...(sqliteCheckpointKeys === undefined ? {} : { checkpointEveryKeys: Number(sqliteCheckpointKeys) }),
  });
}
const targets: Array<{ name: string; url: string; cleanup?: () => Promise<void> }> = [
  { name: 'memory', url: 'memory' },
  { name: 'sqlite', url: `sqlite:${join(dir, 'bench.sqlite')}` },
];
if (process.env.REDIS_URL) targets.push({ name: 'redis', url: process.env.REDIS_URL, cleanup: () => cleanupRedis(process.env.REDIS_URL!, prefix) });
else console.error('redis skipped: REDIS_URL is not set');
if (process.env.DATABASE_URL) {
  targets.push({ name: 'postgres', url: process.env.DATABASE_URL, cleanup: () => cleanupPostgres(process.env.DATABASE_URL!, prefix) });
} else console.error('postgres skipped: DATABASE_URL is not set');

const results: Array<{ adapter: string; round: number } & RoundResult> = [];
try {
  for (const target of targets) {
    if (only !== undefined && !only.includes(target.name)) continue;
    let store = await openStore(target.url);
    try {
      if (prefillCount > 0) {
        const startedAt = Date.now();
        await prefill(store, prefillCount);
        // Reopened like a restarted worker: the file is settled (WAL checkpointed) before the phases.
        await store.close();
        store = await openStore(target.url);
        console.error(`${target.name}: prefilled ${prefillCount.toLocaleString('en-US')} done marks in ${((Date.now() - startedAt) / 1e3).toFixed(1)} s`);
      }
      // Warm-up: connections, prepared plans, script cache.
      await store.claim(['bench/warmup:1'], 'warmup', 1_000);
      await store.markDone(['bench/warmup:1']);
      for (let r = 1; r <= rounds; r++) results.push({ adapter: target.name, round: r, ...(await round(target.name, store)) });
    } finally {
      await store.close();
      await target.cleanup?.();
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}

const marks = markGroup > 0 ? `markDone per key, ${markGroup} at a time` : 'markDone per batch';
const shape = interleave ? 'interleaved batch by batch' : `${inFlight} in flight, one phase after the other`;
console.log(`batches of ${batchSize} keys, ${shape}, ${batches * batchSize} event ids per phase, prefill ${prefillCount}, ${marks} (node ${process.version})`);
console.log(
  'µs per key: CPU of all threads (user + system) while the call ran, event loop busy (wall time not idle) during the call; max: the longest busy call',
);
const cell = (text: string, width = 11) => text.padStart(width);
console.log(`${'adapter'.padEnd(12)}${'phase'.padEnd(11)}${cell('ids/s', 12)}${cell('CPU µs')}${cell('busy µs')}${cell('max ms')}`);
const fixed = (n: number) => (Number.isNaN(n) ? '-' : n.toFixed(1));
for (const { adapter, round: r, figures, roundCpuUs, roundMainUs, stallMaxMs, stallP99Ms } of results) {
  const name = rounds > 1 ? `${adapter} #${r}` : adapter;
  for (const phase of PHASES) {
    const f = figures[phase];
    console.log(
      `${name.padEnd(12)}${phase.padEnd(11)}${cell(Math.round(f.idsPerSecond).toLocaleString('en-US'), 12)}${cell(fixed(f.cpuUs))}${cell(fixed(f.busyUs))}${cell(fixed(f.maxBusyMs))}`,
    );
  }
  // Phases chain synchronous calls through microtasks: the event loop turns only between phases.
  const stalls = interleave ? `event-loop delay max ${stallMaxMs.toFixed(1)} ms, p99 ${stallP99Ms.toFixed(1)} ms` : 'event-loop delay: see --interleave';
  console.log(`${name.padEnd(12)}round: CPU ${fixed(roundCpuUs)} µs per key operation (main thread ${fixed(roundMainUs)}); ${stalls}`);
}
