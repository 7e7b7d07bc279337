import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { WorkerConfig } from '../../src/config/types.js';
import { waitForOutput } from './child-output.js';
import type { EmulatorChild } from './emulator.js';
import type { LoopRun } from './loops.js';
import { inCgroup } from './memory-cgroup.js';

/** What a worker child reports on SIGTERM (bench/worker/worker-child.mjs). */
export interface WorkerStats {
  events: number;
  firstPullMs?: number;
  lastAckMs?: number;
  cpuUs: number;
  /** The main thread's share of cpuUs (Node 24; undefined where Node cannot tell threads apart). */
  mainCpuUs?: number;
  /** V8's helper threads' share of cpuUs (compilation, GC; Linux). */
  v8HelperCpuUs?: number;
  rssMiB: number;
}

export interface Phase {
  events: number;
  seconds: number;
  eventsPerSecond: number;
  cpuUsPerEvent: number;
  /** The main threads' CPU per event, where every process reported it. */
  mainCpuUsPerEvent: number | undefined;
  /** V8's helper threads' CPU per event (compilation and GC), where every process reported it. */
  v8HelperCpuUsPerEvent: number | undefined;
  processes: WorkerStats[];
  rssSamples: string[];
  /** With `windowEvents`: events/s of each window of that many events, the first from the first leased batch. */
  windowRates: number[];
}

/** A per-process figure summed over the processes, per event done; undefined unless every process reported it. */
function perEvent(stats: readonly WorkerStats[], done: number, figure: (s: WorkerStats) => number | undefined): number | undefined {
  let sum = 0;
  for (const s of stats) {
    const value = figure(s);
    if (value === undefined) return undefined;
    sum += value;
  }
  return sum / done;
}

/** A no-op phase's figures: both isolations' rates, their shares of the raw pull+ack ceiling, and CPU per event. */
export function noopShares(raw: Pick<Phase, 'eventsPerSecond' | 'cpuUsPerEvent'>, none: Phase, thread: Phase) {
  return {
    rawPullAckEventsPerSecond: raw.eventsPerSecond,
    frameworkNoneEventsPerSecond: none.eventsPerSecond,
    frameworkThreadEventsPerSecond: thread.eventsPerSecond,
    fractionOfRawNone: none.eventsPerSecond / raw.eventsPerSecond,
    fractionOfRawThread: thread.eventsPerSecond / raw.eventsPerSecond,
    cpuRawClientLoop: raw.cpuUsPerEvent,
    cpuFrameworkNone: none.cpuUsPerEvent,
    cpuFrameworkThread: thread.cpuUsPerEvent,
    // The main thread alone (Node 24): with `thread` the one that bounds a no-op run.
    ...(none.mainCpuUsPerEvent === undefined || thread.mainCpuUsPerEvent === undefined
      ? {}
      : { cpuMainThreadNone: none.mainCpuUsPerEvent, cpuMainThreadThread: thread.mainCpuUsPerEvent }),
    // V8's compiler and GC helper threads: in a fresh process about as busy as the main thread.
    ...(none.v8HelperCpuUsPerEvent === undefined || thread.v8HelperCpuUsPerEvent === undefined
      ? {}
      : { cpuV8HelpersNone: none.v8HelperCpuUsPerEvent, cpuV8HelpersThread: thread.v8HelperCpuUsPerEvent }),
  };
}

export interface RunWorkersOptions {
  /** Environment of the worker processes (the handler reads BENCH_HANDLER_DELAY_MS, BENCH_EFFECTS_FILE). */
  env?: Record<string, string>;
  /** Unmeasured events each process handles first (0: a fresh process is measured). */
  warmUp: number;
  /** An RSS line every that many events (phase d); the measured events then arrive as the backlog shrinks. */
  rssEvery?: number;
  /** Measured events' subjects cycle over this many entries (0: a subject per event). */
  subjects?: number;
  /** Report the rate of every window of this many events (one process only). */
  windowEvents?: number;
}

/** Worker child processes of one benchmark run: their config defaults, temporary folder and cgroup. */
export class BenchWorkers {
  readonly #dir: string;
  readonly #store: string;
  readonly #cgroupProcs: string | undefined;

  constructor(options: { dir: string; store: string; cgroupProcs: string | undefined }) {
    this.#dir = options.dir;
    this.#store = options.store;
    this.#cgroupProcs = options.cgroupProcs;
  }

  /** The benchmark's configuration: 4 workers, limit 100, concurrency 16, the run's store (`memory` or SQLite). */
  config(url: string, name: string, overrides: Partial<WorkerConfig> = {}): WorkerConfig {
    return {
      baseUrl: url,
      authUrl: url,
      destination: 'dev-consumer',
      tenant: 'dev-tenant',
      clientId: 'dev-client',
      clientSecret: 'dev-secret',
      handlersDir: fileURLToPath(new URL('./handlers', import.meta.url)),
      workers: 4,
      workerIdPrefix: `bench-${name}-${randomUUID().slice(0, 6)}`,
      limit: 100,
      visibilitySeconds: 60,
      concurrency: 16,
      maxAttempts: 5,
      idempotencyUrl: this.#store === 'memory' ? 'memory' : `sqlite:${join(this.#dir, `${name}.sqlite`)}`,
      idempotencyPrefix: `bench-${randomUUID()}`,
      idempotencyTtlMs: 3_600_000,
      deadLetterUrl: `file:${join(this.#dir, 'dead-letter.jsonl')}`,
      metricsPort: 0,
      metricsHost: '127.0.0.1',
      exitWhenIdle: false,
      logLevel: 'warn',
      isolation: 'none',
      shutdownTimeoutSeconds: 5,
      forwardMode: 'binary',
      ...overrides,
    };
  }

  /** A path in the run's temporary folder. */
  path(name: string): string {
    return join(this.#dir, name);
  }

  /** Starts `configs.length` worker processes, appends `events` once all are ready, waits for the drain. */
  async run(em: EmulatorChild, configs: WorkerConfig[], events: number, options: RunWorkersOptions): Promise<Phase> {
    const rssEvery = options.rssEvery ?? 0;
    const entry = fileURLToPath(new URL('./worker-child.mjs', import.meta.url));
    const children = configs.map((config) => {
      // BENCH_PROFILE_DIR=dir writes a CPU profile of each worker process there, sampled every
      // BENCH_PROFILE_INTERVAL µs (Node's default 1000: too coarse for one fresh 20,000-event run).
      const profile = process.env.BENCH_PROFILE_DIR
        ? ['--cpu-prof', '--cpu-prof-interval', process.env.BENCH_PROFILE_INTERVAL ?? '1000', '--cpu-prof-dir', process.env.BENCH_PROFILE_DIR]
        : [];
      const argv = [...profile, entry, JSON.stringify(config)];
      const [command, args] = this.#cgroupProcs === undefined ? [process.execPath, argv] : inCgroup(this.#cgroupProcs, process.execPath, argv);
      const child = spawn(command, args, {
        // BENCH_WORKER_NODE_OPTIONS: V8 flags for the worker processes only, e.g. the heap Node sizes
        // itself in a container with a memory limit, reproduced outside one.
        env: {
          ...process.env,
          ...options.env,
          BENCH_RSS_EVERY: String(rssEvery),
          BENCH_WINDOW_EVENTS: String(options.windowEvents ?? 0),
          ...(process.env.BENCH_WORKER_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_WORKER_NODE_OPTIONS } : {}),
          // BENCH_WORKER_COMPILE_CACHE=dir: Node's compile cache for the worker processes, so that a
          // fresh process does not spend its first moments compiling the framework.
          ...(process.env.BENCH_WORKER_COMPILE_CACHE ? { NODE_COMPILE_CACHE: process.env.BENCH_WORKER_COMPILE_CACHE } : {}),
        },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let output = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
      // BENCH_CHILD_DUMP=dir: each worker process's whole stdout kept there (with BENCH_V8_FLAGS=--trace-opt, V8's compile log).
      if (process.env.BENCH_CHILD_DUMP) child.on('close', () => writeFileSync(join(process.env.BENCH_CHILD_DUMP as string, `child-${child.pid}.out`), output));
      // 'close', not 'exit': the last stdout chunk (STATS) can arrive after the process exited.
      return { child, exited: once(child, 'close'), output: () => output };
    });
    const everyChild = (marker: RegExp) =>
      Promise.all(children.map((c) => waitForOutput(c.output, marker, { exited: () => c.child.exitCode !== null, child: 'worker child' })));
    await everyChild(/READY/);
    if (options.warmUp > 0) {
      // Steady state, not start-up: the processes JIT-compile their hot paths on unmeasured events.
      await em.feed(options.warmUp);
      await em.waitCaughtUp();
      for (const c of children) c.child.kill('SIGUSR2');
      await everyChild(/RESET/);
    }
    // A measured phase's events are all there when it starts, as for the raw loops (appending while
    // the worker pulls costs the emulator's time in the worker's window); phase d's 500,000 arrive as
    // the backlog shrinks.
    await em.feed(events, rssEvery > 0 ? 100_000 : events, options.subjects ?? 0);
    await em.waitCaughtUp();
    for (const c of children) c.child.kill('SIGTERM');
    await Promise.all(children.map((c) => c.exited));
    const stats = children.map((c) => {
      const line = /STATS (.*)/.exec(c.output());
      if (line === null) throw new Error(`worker child ended (exit ${c.child.exitCode ?? c.child.signalCode}) without STATS; its output:\n${c.output()}`);
      return JSON.parse(line[1]!) as WorkerStats;
    });
    const first = Math.min(...stats.map((s) => s.firstPullMs ?? Infinity));
    const last = Math.max(...stats.map((s) => s.lastAckMs ?? 0));
    const done = stats.reduce((sum, s) => sum + s.events, 0);
    const seconds = (last - first) / 1000;
    const windowEnds = [...(children[0]?.output() ?? '').matchAll(/WINDOW \d+ (\d+)/g)].map((m) => Number(m[1]));
    return {
      events: done,
      seconds,
      eventsPerSecond: done / seconds,
      cpuUsPerEvent: stats.reduce((sum, s) => sum + s.cpuUs, 0) / done,
      mainCpuUsPerEvent: perEvent(stats, done, (s) => s.mainCpuUs),
      v8HelperCpuUsPerEvent: perEvent(stats, done, (s) => s.v8HelperCpuUs),
      processes: stats,
      rssSamples: children.flatMap((c) => [
        ...[...c.output().matchAll(/READY (.+)/g)].map((m) => `ready: ${m[1]}`),
        ...[...c.output().matchAll(/RSS (\d+) (.+)/g)].map((m) => `${m[1]}: ${m[2]}`),
      ]),
      windowRates: windowEnds.map((end, i) => (options.windowEvents ?? 0) / ((end - (i === 0 ? first : (windowEnds[i - 1] as number))) / 1000)),
    };
  }

  /**
   * The raw pull+ack ceiling: bench/worker/loops-child.ts in a fresh process, which first acks
   * `warmUp` unmeasured events, as each worker process does.
   */
  async runRawLoops(em: EmulatorChild, events: number, warmUp: number, subjects = 0): Promise<LoopRun> {
    const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('./loops-child.ts', import.meta.url)), em.url], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    const exited = once(child, 'close');
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    const next = (marker: RegExp, from: number) =>
      waitForOutput(() => output, marker, { from, exited: () => child.exitCode !== null, timeoutMs: 600_000, child: 'loops child' });
    // Measured: the events are there before the loops start, as for the workers. Warm-up: fed as they go.
    const run = async (count: number, measured: boolean): Promise<LoopRun> => {
      const from = output.length;
      if (measured) await em.append(count, subjects);
      child.stdin.write(`RUN ${count}\n`);
      if (!measured) await em.feed(count);
      return JSON.parse((await next(/RESULT (.*)/, from))[1]!) as LoopRun;
    };
    try {
      await next(/READY/, 0);
      if (warmUp > 0) await run(warmUp, false);
      return await run(events, true);
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
  }
}
