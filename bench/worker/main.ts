/**
 * Worker throughput, overhead and memory against one emulator (a child process), in one run:
 *
 *   npm run bench:worker -- [--only a,b,c,d,e,f,g,h,i] [--events 60000] [--noop-events 180000] [--naive-events 8000] [--rss-events 500000] [--store sqlite|memory] [--repeat 3] [--warm-up 400000] [--emulator-warm-up 300000]
 *                           [--fresh-events 20000] [--latencies 0,20,50] [--long-events 120000] [--window-events 20000] [--cpu-events 3000]
 *
 * a) events/s with a 2 ms async handler (4 workers, limit 100, concurrency 16) vs a naive loop
 *    (pull, await each event in turn, ack; 4 such loops)      target >= 8x
 * b) no-op handler: fraction of the raw pull+ack ceiling (4 hand-written pull+ack loops, same
 *    client, nothing else, in a fresh process per round)          target >= 60 %
 * c) framework CPU per event (µs) with a no-op handler, --isolation none and thread
 * d) RSS of a worker process every 50,000 events up to 500,000 target < 200 MB and flat
 * e) two worker processes sharing Redis vs one process (REDIS_URL): the scaling factor
 * f-i) fresh worker processes, subjects cycling over 50, the memory store (bench/worker/flow-phases.ts):
 *    f) 2 ms handler that appends each event id to a file vs naive loops doing the same, at 0, 20 and
 *       50 ms added to every pull and ack                     target >= 8x at 0 ms, >= 85 % of it at 20 and 50;
 *       beside them the handler alone, its own ceiling (bench/worker/handler-ceiling-child.mjs)
 *    g) the first and the later --window-events windows of a long run  target first >= 80 % of later
 *    h) no-op handler: share of the raw pull+ack ceiling     target >= 60 % none, >= 45 % thread
 *    i) a handler taking 1 ms of CPU, `thread`: 50 subjects against a subject per event (the chains
 *       of 50 subjects spread over the threads)            no target; ~1 when they do, ~0.5 on two threads when not
 *
 * The worker processes run the compiled code in dist/ (`npm run bench:worker` builds first).
 * In phases a-e every measured process (worker or raw loops) first handles --warm-up events unmeasured, and the
 * emulator serves --emulator-warm-up events before the first phase: Node processes running this
 * code reach their steady speed only after a few hundred thousand events (V8 optimises as it goes).
 * Every phase drains the same consumer (dev-consumer) after appending its events, so phases never
 * see each other's events; the worker runs as a child process (bench/worker/worker-child.mjs).
 */
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { WorkerConfig } from '../../src/config/types.js';
import { EmulatorChild } from './emulator.js';
import { cpuBoundPhase, freshNoopPhase, latencyPhase, windowsPhase, type FlowPhaseOptions } from './flow-phases.js';
import { runLoops, type LoopRun } from './loops.js';
import { memoryCgroup } from './memory-cgroup.js';
import { BenchWorkers, noopShares, type Phase } from './workers.js';

const { values } = parseArgs({
  options: {
    only: { type: 'string', default: 'a,b,c,d,e,f,g,h,i' },
    events: { type: 'string', default: '60000' },
    // Phases b and c: the raw loops take a third of a second for 60,000 events, and a window that
    // short is mostly its start and end, which makes the rate it gives low and uneven.
    'noop-events': { type: 'string', default: '180000' },
    'naive-events': { type: 'string', default: '8000' },
    'rss-events': { type: 'string', default: '500000' },
    store: { type: 'string', default: 'sqlite' },
    repeat: { type: 'string', default: '3' },
    'warm-up': { type: 'string', default: '400000' },
    'emulator-warm-up': { type: 'string', default: '300000' },
    // Phases f-h: a burst of events on a fresh process, as a new user would try it.
    'fresh-events': { type: 'string', default: '20000' },
    latencies: { type: 'string', default: '0,20,50' },
    'long-events': { type: 'string', default: '120000' },
    'window-events': { type: 'string', default: '20000' },
    // Phase i: a handler taking 1 ms of CPU per event, so a run of a few seconds per configuration.
    'cpu-events': { type: 'string', default: '3000' },
  },
});
if (!existsSync(fileURLToPath(new URL('../../dist/worker/start.js', import.meta.url)))) {
  console.error('bench/worker runs the compiled worker: run `npm run build` first (npm run bench:worker does)');
  process.exit(2);
}
const only = new Set(values.only!.split(','));
const EVENTS = Number(values.events);
const NOOP_EVENTS = Number(values['noop-events']);
const NAIVE_EVENTS = Number(values['naive-events']);
const RSS_EVENTS = Number(values['rss-events']);
/** Phases a-c run this many rounds; figures are medians, each ratio taken within its round. */
const REPEAT = Math.max(1, Number(values.repeat));
/** BENCH_WORKER_MEMORY_LIMIT_MIB=512: worker processes run in a memory cgroup, as in a container with that limit. */
const memoryLimitMiB = Number(process.env.BENCH_WORKER_MEMORY_LIMIT_MIB ?? 0);
const cgroupProcs = memoryLimitMiB > 0 ? memoryCgroup('durable-worker-bench', memoryLimitMiB) : undefined;
/** Events each worker process (and the raw loops, once) handles before a measured phase. */
const WARM_UP_EVENTS = Number(values['warm-up']);
/** Events the emulator serves (to raw loops) before the first phase: it warms up as slowly as its clients. */
const EMULATOR_WARM_UP_EVENTS = Number(values['emulator-warm-up']);
const dir = mkdtempSync(join(tmpdir(), 'dw-bench-worker-'));

const workers = new BenchWorkers({ dir, store: values.store!, cgroupProcs });
/** Every measured process of phases a-e first handles WARM_UP_EVENTS (phase d: none, it measures from the start). */
const runWorkers = (em: EmulatorChild, configs: WorkerConfig[], events: number, env: Record<string, string>, rssEvery = 0): Promise<Phase> =>
  workers.run(em, configs, events, { env, rssEvery, warmUp: rssEvery > 0 ? 0 : WARM_UP_EVENTS });
const workerConfig = (url: string, name: string, overrides: Partial<WorkerConfig>): WorkerConfig => workers.config(url, name, overrides);
const runRawLoops = (em: EmulatorChild, events: number): Promise<LoopRun> => workers.runRawLoops(em, events, WARM_UP_EVENTS);

const round = (n: number, digits = 0) => Number(n.toFixed(digits));
const report: Record<string, unknown> = {
  date: new Date().toISOString(),
  node: process.version,
  cpus: cpus().length,
  cpuModel: cpus()[0]?.model,
  store: values.store,
  loadAverageAtStart: loadavg().map((l) => round(l, 2)),
  workerMemoryLimitMiB: memoryLimitMiB > 0 ? memoryLimitMiB : `none (host: ${round(totalmem() / 2 ** 30, 1)} GiB)`,
};
const log = (label: string, value: unknown) => {
  report[label] = value;
  console.error(`${label}: ${JSON.stringify(value)}`);
};

/** One worker process with in-process handlers, then one with handler threads, on `events` events each. */
async function runBothIsolations(phase: string, env: Record<string, string>, events = EVENTS): Promise<{ none: Phase; thread: Phase }> {
  const none = await runWorkers(em, [workerConfig(em.url, `${phase}-none`, { isolation: 'none' })], events, env);
  const thread = await runWorkers(em, [workerConfig(em.url, `${phase}-thread`, { isolation: 'thread' })], events, env);
  return { none, thread };
}

/** Runs `round` REPEAT times (the two cores are shared: one round can be unlucky). */
async function repeat<T>(round: () => Promise<T>): Promise<T[]> {
  const results: T[] = [];
  for (let i = 0; i < REPEAT; i++) results.push(await round());
  return results;
}

const median = (values: number[]) => {
  const sorted = [...values].sort((x, y) => x - y);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[middle] as number) : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
};

/** Per figure: the median over the rounds and every round's value (digits per figure, default 0). */
function summarize<T extends Record<string, number>>(rounds: T[], digits: Partial<Record<keyof T, number>>): Record<string, unknown> {
  const out: Record<string, unknown> = { rounds: rounds.length };
  for (const key of Object.keys(rounds[0] ?? {})) {
    const places = digits[key as keyof T] ?? 0;
    const values = rounds.map((r) => r[key] as number);
    out[key] = round(median(values), places);
    if (rounds.length > 1) out[`${key}Rounds`] = values.map((v) => round(v, places));
  }
  return out;
}

const em = await EmulatorChild.start();
try {
  if (EMULATOR_WARM_UP_EVENTS > 0 && ['a', 'b', 'c', 'f', 'g', 'h'].some((phase) => only.has(phase))) {
    // The emulator lives through every phase: measured rounds all meet a warm one, not only the later ones.
    await Promise.all([runLoops(em.url, { loops: 4, limit: 100, handlerDelayMs: 0, expected: EMULATOR_WARM_UP_EVENTS }), em.feed(EMULATOR_WARM_UP_EVENTS)]);
  }
  if (only.has('a')) {
    const env = { BENCH_HANDLER_DELAY_MS: '2' };
    const rounds = await repeat(async () => {
      await em.append(NAIVE_EVENTS);
      const naive = await runLoops(em.url, { loops: 4, limit: 100, handlerDelayMs: 2, expected: NAIVE_EVENTS });
      const { none, thread } = await runBothIsolations('a', env);
      return {
        naiveEventsPerSecond: naive.eventsPerSecond,
        frameworkNoneEventsPerSecond: none.eventsPerSecond,
        frameworkThreadEventsPerSecond: thread.eventsPerSecond,
        speedupNone: none.eventsPerSecond / naive.eventsPerSecond,
        speedupThread: thread.eventsPerSecond / naive.eventsPerSecond,
      };
    });
    log('a_2ms_handler', summarize(rounds, { speedupNone: 1, speedupThread: 1 }));
  }
  if (only.has('b') || only.has('c')) {
    const rounds = await repeat(async () => {
      const raw = await runRawLoops(em, NOOP_EVENTS);
      const { none, thread } = await runBothIsolations('b', {}, NOOP_EVENTS);
      return {
        ...noopShares(raw, none, thread),
        cpuOverheadNone: none.cpuUsPerEvent - raw.cpuUsPerEvent,
        cpuOverheadThread: thread.cpuUsPerEvent - raw.cpuUsPerEvent,
      };
    });
    const summary = summarize(rounds, {
      fractionOfRawNone: 2,
      fractionOfRawThread: 2,
      cpuRawClientLoop: 1,
      cpuFrameworkNone: 1,
      cpuFrameworkThread: 1,
      cpuOverheadNone: 1,
      cpuOverheadThread: 1,
    });
    const cpu = ([key]: [string, unknown]) => key.startsWith('cpu');
    const entries = Object.entries(summary);
    log('b_noop_handler', Object.fromEntries(entries.filter((e) => !cpu(e))));
    log('c_cpu_us_per_event', Object.fromEntries(entries.filter((e) => cpu(e) || e[0] === 'rounds')));
  }
  if (only.has('d')) {
    const isolation = process.env.BENCH_RSS_ISOLATION === 'none' ? 'none' : 'thread';
    const rss = await runWorkers(em, [workerConfig(em.url, `d-${isolation}`, { isolation })], RSS_EVENTS, {}, 50_000);
    log('d_rss', {
      isolation,
      events: rss.events,
      eventsPerSecond: round(rss.eventsPerSecond),
      cpuUsPerEvent: round(rss.cpuUsPerEvent, 1),
      samples: rss.rssSamples,
      afterClose: rss.processes[0]?.rssMiB,
    });
  }
  if (only.has('e')) {
    const redis = process.env.REDIS_URL;
    if (redis === undefined) log('e_replicas', 'skipped: REDIS_URL is not set');
    else {
      const env = { BENCH_HANDLER_DELAY_MS: '2' };
      const shared = { idempotencyUrl: redis, idempotencyPrefix: `bench-${randomUUID()}`, isolation: 'none' as const };
      const one = await runWorkers(em, [workerConfig(em.url, 'e-one', { ...shared, idempotencyPrefix: `bench-${randomUUID()}` })], EVENTS, env);
      const two = await runWorkers(em, [workerConfig(em.url, 'e-two-0', shared), workerConfig(em.url, 'e-two-1', shared)], EVENTS, env);
      log('e_replicas', {
        oneProcessEventsPerSecond: round(one.eventsPerSecond),
        twoProcessesEventsPerSecond: round(two.eventsPerSecond),
        scalingFactor: round(two.eventsPerSecond / one.eventsPerSecond, 2),
        split: two.processes.map((p) => p.events),
      });
    }
  }
  const flow: FlowPhaseOptions = {
    em,
    workers,
    repeat: REPEAT,
    freshEvents: Number(values['fresh-events']),
    naiveEvents: NAIVE_EVENTS,
    latenciesMs: values.latencies!.split(',').map(Number),
    longEvents: Number(values['long-events']),
    windowEvents: Number(values['window-events']),
    cpuEvents: Number(values['cpu-events']),
    log,
    summarize,
  };
  if (only.has('f')) await latencyPhase(flow);
  if (only.has('g')) await windowsPhase(flow);
  if (only.has('h')) await freshNoopPhase(flow);
  if (only.has('i')) await cpuBoundPhase(flow);
} finally {
  await em.stop();
  rmSync(dir, { recursive: true, force: true });
}
report.loadAverageAtEnd = loadavg().map((l) => round(l, 2));
console.log(JSON.stringify(report, null, 2));
