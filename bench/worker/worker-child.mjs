/**
 * One worker process of bench/worker: `startWorker` of the compiled worker (dist/, as the bin runs
 * it; plain JavaScript so no TypeScript loader runs in this process or its worker threads) with the
 * config given as JSON in argv[2], after the heap sizing `durable-worker run` applies. Prints `READY`
 * once started (idle, pulling), `RSS <events> <MiB>` every BENCH_RSS_EVERY events (with
 * BENCH_HEAP_DETAIL=1 also RSS by kind and each thread's heap spaces and collections), `WINDOW
 * <events> <epoch ms>` each time BENCH_WINDOW_EVENTS more events are done, `RESET` after
 * SIGUSR2 (the parent's warm-up is over: counting restarts), and on SIGTERM, after a clean close,
 * `STATS <json>`: events done, the wall-clock span from its first leased batch to its last committed
 * ack, and the process CPU time (all threads) from that first batch to the SIGTERM; on Node 24 also
 * the main thread's own (`process.threadCpuUsage`), the one that pulls, dispatches and acks; on Linux
 * also the CPU time of V8's helper threads (`V8Worker`: compilation and GC) from /proc/self/task.
 */
import { readdirSync, readFileSync } from 'node:fs';
import v8 from 'node:v8';
import pino from 'pino';
import { sizeRunHeaps } from '../../dist/cli/heap-sizing.js';
import { startWorker } from '../../dist/worker/start.js';
import { countCollections, heapSpaces, rssKinds, threadHeaps } from './heap-report.mjs';

// BENCH_V8_FLAGS: V8 flags set at run time, before the worker starts (flags NODE_OPTIONS refuses).
if (process.env.BENCH_V8_FLAGS) v8.setFlagsFromString(process.env.BENCH_V8_FLAGS);
/** @type {import('../../src/config/types.js').WorkerConfig} */
const config = JSON.parse(process.argv[2] ?? '{}');
// As `durable-worker run` does before it starts the worker (BENCH_HEAP_SIZING=off: V8's own sizing).
if (process.env.BENCH_HEAP_SIZING !== 'off') sizeRunHeaps({ isolation: config.isolation });
// BENCH_WORKER_OTEL=1: tracing on (--otel), exported as the OTEL_* variables say (docs/tracing.md).
if (process.env.BENCH_WORKER_OTEL === '1') config.otel = true;
const rssEvery = Number(process.env.BENCH_RSS_EVERY ?? 0);
const windowEvery = Number(process.env.BENCH_WINDOW_EVENTS ?? 0);

const worker = await startWorker(config, {
  logger: pino({ level: 'warn' }, pino.destination(2)),
  // Short idle waits: the run starts when the parent appends, not up to 2 s later.
  timings: { idleMinMs: 5, idleMaxMs: 20 },
  healthServer: false,
});

/** `<rss> MiB (heap <used>/<total>, external <n>)`: whether growth is the JS heap, buffers or native. */
function memory() {
  const m = process.memoryUsage();
  const mib = (n) => (n / 1048576).toFixed(1);
  return `${mib(m.rss)} MiB (heap ${mib(m.heapUsed)}/${mib(m.heapTotal)}, external ${mib(m.external)}, arrayBuffers ${mib(m.arrayBuffers)})`;
}

/** memory() plus the main thread's heap spaces and every handler thread's (BENCH_HEAP_DETAIL=1). */
async function memoryDetail() {
  const summary = memory();
  if (process.env.BENCH_HEAP_DETAIL !== '1') return summary;
  return [summary, rssKinds(), `main: ${heapSpaces()} ${collections?.summary()}`, ...(await threadHeaps())].join(' | ');
}

let events = 0;
/** The main thread's collections since the warm-up ended, with BENCH_HEAP_DETAIL=1. */
const collections = process.env.BENCH_HEAP_DETAIL === '1' ? countCollections() : undefined;
/** RSS lines still waiting for the handler threads' answers: SIGTERM lets them finish first. */
const reports = new Set();
/** @type {number | undefined} */
let firstPullMs;
/** @type {number | undefined} */
let lastAckMs;
/** @type {NodeJS.CpuUsage | undefined} */
let cpuAtFirst;
/** Whether Node can give the main thread's CPU time alone (`process.threadCpuUsage`: Node 24, not 20). */
const hasThreadCpu = typeof process.threadCpuUsage === 'function';
/** @type {NodeJS.CpuUsage | undefined} */
let mainCpuAtFirst;

/**
 * CPU time (µs) of this process's V8 helper threads, which compile optimised code and help the
 * collector: in a fresh process about as much as the main thread. Linux, where Node names them
 * (24 does, 20 does not); undefined elsewhere.
 */
function v8HelperCpuUs() {
  try {
    let ticks = 0;
    let found = false;
    for (const task of readdirSync('/proc/self/task')) {
      const stat = readFileSync(`/proc/self/task/${task}/stat`, 'utf8');
      if (!stat.includes('(V8Worker)')) continue;
      found = true;
      // Fields after the name: utime and stime are the 12th and 13th (clock ticks, 100 per second).
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(fields[11]) + Number(fields[12]);
    }
    // Node 20 leaves its threads unnamed: nothing to tell them apart by.
    return found ? ticks * 10_000 : undefined;
  } catch {
    return undefined;
  }
}
/** @type {number | undefined} */
let helperCpuAtFirst;
worker.events.on('lease:pulled', () => {
  if (firstPullMs !== undefined) return;
  firstPullMs = Date.now();
  cpuAtFirst = process.cpuUsage();
  if (hasThreadCpu) mainCpuAtFirst = process.threadCpuUsage();
  helperCpuAtFirst = v8HelperCpuUs();
});
worker.events.on('run:done', (e) => {
  if (e.outcome !== 'ok' && e.outcome !== 'duplicate') return;
  events++;
  if (windowEvery > 0 && events % windowEvery === 0) process.stdout.write(`WINDOW ${events} ${Date.now()}\n`);
  if (rssEvery > 0 && events % rssEvery === 0) {
    const sample = events;
    const report = memoryDetail().then((detail) => void process.stdout.write(`RSS ${sample} ${detail}\n`));
    reports.add(report);
    void report.finally(() => reports.delete(report));
  }
});
worker.events.on('ack:done', (e) => {
  if (e.status === 'committed') lastAckMs = Date.now();
});

// The parent's warm-up is over: measure from the next batch on.
process.on('SIGUSR2', () => {
  events = 0;
  firstPullMs = undefined;
  lastAckMs = undefined;
  cpuAtFirst = undefined;
  mainCpuAtFirst = undefined;
  helperCpuAtFirst = undefined;
  collections?.reset();
  process.stdout.write('RESET\n');
});

process.on('SIGTERM', () => {
  // CPU from the first batch to now: the run plus the few idle pulls until the parent saw the drain.
  const used = process.cpuUsage(cpuAtFirst);
  const cpuUs = used.user + used.system;
  const mainUsed = hasThreadCpu ? process.threadCpuUsage(mainCpuAtFirst) : undefined;
  const mainCpuUs = mainUsed === undefined ? undefined : mainUsed.user + mainUsed.system;
  const helpersNow = v8HelperCpuUs();
  const v8HelperCpuUsUsed = helpersNow === undefined || helperCpuAtFirst === undefined ? undefined : helpersNow - helperCpuAtFirst;
  void Promise.all(reports)
    .then(() => worker.close())
    .then(() => {
      const stats = {
        events,
        firstPullMs,
        lastAckMs,
        cpuUs,
        mainCpuUs,
        v8HelperCpuUs: v8HelperCpuUsUsed,
        rssMiB: Number((process.memoryUsage().rss / 1048576).toFixed(1)),
      };
      process.stdout.write(`STATS ${JSON.stringify(stats)}\n`, () => process.exit(0));
    });
});
process.stdout.write(`READY ${await memoryDetail()}\n`);
