/**
 * Phases f-i of bench/worker: the worker as a new user meets it, untuned. Every worker process is
 * fresh (no warm-up), the idempotency store is `memory`, and the events' subjects cycle over 50
 * entries (updates of 50 entries: events of one subject run one after another). The handler awaits
 * a 2 ms timer and appends the event id to a file; the naive loops do the same work.
 *
 * f) 2 ms handler vs 4 naive loops, at 0, 20 and 50 ms added to every pull and ack (the emulator's
 *    latency fault): events/s, the speed-up, and each configuration's rate as a share of its 0 ms
 *    rate in the same round
 * g) one process on a long run: the rate of each window of --window-events, the first against the
 *    median of the later ones
 * h) no-op handler: share of the raw pull+ack ceiling (the raw loops in a fresh process too)
 * i) a CPU-bound handler (1 ms of CPU per event, no timer) with `thread` on --cpu-events events:
 *    subjects over 50 against a subject per event. A subject's events chain in one thread, so this is
 *    whether the chains spread over the threads: the 50-subject rate as a share of the other
 *
 * Beside f's naive loops, the handler's own ceiling: the same handler alone in a fresh process, every
 * subject's events in turn, no framework and no platform (handler-ceiling-child.mjs).
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { countEffects } from './effects.mjs';
import type { EmulatorChild } from './emulator.js';
import { runLoops } from './loops.js';
import { noopShares, type BenchWorkers, type Phase } from './workers.js';

export interface FlowPhaseOptions {
  em: EmulatorChild;
  workers: BenchWorkers;
  /** Rounds of f and h; figures are medians, each ratio taken within its round. */
  repeat: number;
  /** Events of a measured worker process in f and h. */
  freshEvents: number;
  /** Events of the naive loops in f. */
  naiveEvents: number;
  /** Added latencies of f, ms; the first is the base of the shares (0). */
  latenciesMs: number[];
  /** Events of each run of i (its handler takes 1 ms of CPU per event). */
  cpuEvents: number;
  /** Events of g's run and of each of its windows. */
  longEvents: number;
  windowEvents: number;
  log(label: string, value: unknown): void;
  summarize(rounds: Record<string, number>[], digits: Record<string, number>): Record<string, unknown>;
}

/** Subjects of every measured event of these phases. */
export const SUBJECTS = 50;
const HANDLER_DELAY_MS = '2';
/** Phase i's handler: this much CPU per event, no timer. */
const SPIN_MS = '1';
const ISOLATIONS = ['none', 'thread'] as const;

/** Fails the phase when an event's effect is missing: a figure of a run that lost work means nothing. */
function checkEffects(file: string, events: number, what: string): number {
  const { lines, distinct } = countEffects(file);
  if (distinct !== events) throw new Error(`${what}: ${distinct} distinct event ids in ${file}, expected ${events}`);
  // Lines beyond the events are effects applied twice (at least once after a redelivery): reported.
  return lines - distinct;
}

/** A fresh worker process on `events` events: the 2 ms handler with its effect, or (`noop`) a handler that does nothing. */
async function freshWorker(
  options: FlowPhaseOptions,
  name: string,
  isolation: 'none' | 'thread',
  events: number,
  handler: '2ms' | 'noop',
  windowEvents = 0,
): Promise<Phase & { repeatedEffects: number }> {
  const { em, workers } = options;
  const effectsFile = workers.path(`effects-${name}-${randomUUID().slice(0, 6)}.txt`);
  const env: Record<string, string> = handler === 'noop' ? {} : { BENCH_HANDLER_DELAY_MS: HANDLER_DELAY_MS, BENCH_EFFECTS_FILE: effectsFile };
  const phase = await workers.run(em, [workers.config(em.url, name, { isolation, idempotencyUrl: 'memory' })], events, {
    env,
    warmUp: 0,
    subjects: SUBJECTS,
    windowEvents,
  });
  return { ...phase, repeatedEffects: handler === 'noop' ? 0 : checkEffects(effectsFile, events, `${name} worker`) };
}

/** The handler alone on `events` events over SUBJECTS, in a fresh process: events/s. */
async function handlerCeiling(options: FlowPhaseOptions, events: number): Promise<number> {
  const effectsFile = options.workers.path(`effects-ceiling-${randomUUID().slice(0, 6)}.txt`);
  const child = fileURLToPath(new URL('./handler-ceiling-child.mjs', import.meta.url));
  const { stdout } = await promisify(execFile)(process.execPath, [child, String(events), String(SUBJECTS)], {
    env: { ...process.env, BENCH_HANDLER_DELAY_MS: HANDLER_DELAY_MS, BENCH_EFFECTS_FILE: effectsFile },
  });
  checkEffects(effectsFile, events, 'handler ceiling');
  return (JSON.parse(stdout) as { eventsPerSecond: number }).eventsPerSecond;
}

/** f: fresh processes at each added latency, the naive loops and the handler's own ceiling beside them. */
export async function latencyPhase(options: FlowPhaseOptions): Promise<void> {
  const { em, workers } = options;
  const rounds: Record<string, number>[] = [];
  for (let r = 0; r < options.repeat; r++) {
    const round: Record<string, number> = {};
    round.handlerCeiling = await handlerCeiling(options, options.freshEvents);
    try {
      for (const latencyMs of options.latenciesMs) {
        await em.setLatency(latencyMs);
        const naiveEffects = workers.path(`effects-naive-${randomUUID().slice(0, 6)}.txt`);
        await em.append(options.naiveEvents, SUBJECTS);
        const naive = await runLoops(em.url, {
          loops: 4,
          limit: 100,
          handlerDelayMs: Number(HANDLER_DELAY_MS),
          expected: options.naiveEvents,
          effectsFile: naiveEffects,
        });
        checkEffects(naiveEffects, options.naiveEvents, 'naive loops');
        round[`naive${latencyMs}ms`] = naive.eventsPerSecond;
        if (latencyMs === options.latenciesMs[0]) round.handlerCeilingSpeedup = round.handlerCeiling / naive.eventsPerSecond;
        for (const isolation of ISOLATIONS) {
          const run = await freshWorker(options, `f${latencyMs}-${isolation}`, isolation, options.freshEvents, '2ms');
          round[`${isolation}${latencyMs}ms`] = run.eventsPerSecond;
          round[`${isolation}${latencyMs}msSpeedup`] = run.eventsPerSecond / naive.eventsPerSecond;
          round[`${isolation}${latencyMs}msShareOf0ms`] = run.eventsPerSecond / (round[`${isolation}${options.latenciesMs[0]}ms`] as number);
          round[`${isolation}${latencyMs}msShareOfCeiling`] = run.eventsPerSecond / round.handlerCeiling;
          round[`${isolation}${latencyMs}msRepeatedEffects`] = run.repeatedEffects;
        }
      }
    } finally {
      await em.setLatency(0);
    }
    rounds.push(round);
  }
  const digits: Record<string, number> = {};
  for (const key of Object.keys(rounds[0] ?? {})) if (/Speedup|Share/.test(key)) digits[key] = 2;
  options.log('f_fresh_2ms_handler_by_latency', options.summarize(rounds, digits));
}

/** g: one fresh process per isolation on a long run, the rate of every window. */
export async function windowsPhase(options: FlowPhaseOptions): Promise<void> {
  for (const isolation of ISOLATIONS) {
    const run = await freshWorker(options, `g-${isolation}`, isolation, options.longEvents, '2ms', options.windowEvents);
    const later = [...run.windowRates.slice(1)].sort((a, b) => a - b);
    const warm = later.length === 0 ? Number.NaN : (later[Math.floor((later.length - 1) / 2)] as number);
    options.log(`g_windows_${isolation}`, {
      events: run.events,
      eventsPerSecond: Math.round(run.eventsPerSecond),
      windowEvents: options.windowEvents,
      windowRates: run.windowRates.map((rate) => Math.round(rate)),
      firstWindow: Math.round(run.windowRates[0] ?? Number.NaN),
      laterWindowsMedian: Math.round(warm),
      firstShareOfLater: Number(((run.windowRates[0] ?? Number.NaN) / warm).toFixed(2)),
      repeatedEffects: run.repeatedEffects,
    });
  }
}

/**
 * BENCH_H_WINDOW_EVENTS=1000: phase h also prints, per round, how many ms each window of that many
 * events took, from the first leased batch: how long a fresh process runs slower than it ends.
 */
const H_WINDOW_EVENTS = Number(process.env.BENCH_H_WINDOW_EVENTS ?? 0);

const windowMs = (phase: Phase, windowEvents: number) => phase.windowRates.map((rate) => Math.round((windowEvents * 1_000) / rate));

/** h: no-op handler, fresh processes on both sides of the ratio. */
export async function freshNoopPhase(options: FlowPhaseOptions): Promise<void> {
  const { em, workers } = options;
  const rounds: Record<string, number>[] = [];
  for (let r = 0; r < options.repeat; r++) {
    const raw = await workers.runRawLoops(em, options.freshEvents, 0, SUBJECTS);
    const none = await freshWorker(options, 'h-none', 'none', options.freshEvents, 'noop', H_WINDOW_EVENTS);
    const thread = await freshWorker(options, 'h-thread', 'thread', options.freshEvents, 'noop', H_WINDOW_EVENTS);
    rounds.push(noopShares(raw, none, thread));
    if (H_WINDOW_EVENTS > 0)
      options.log(`h_window_ms_round${r + 1}`, {
        windowEvents: H_WINDOW_EVENTS,
        none: windowMs(none, H_WINDOW_EVENTS),
        thread: windowMs(thread, H_WINDOW_EVENTS),
      });
  }
  options.log(
    'h_fresh_noop_handler',
    options.summarize(rounds, {
      fractionOfRawNone: 2,
      fractionOfRawThread: 2,
      cpuRawClientLoop: 1,
      cpuFrameworkNone: 1,
      cpuFrameworkThread: 1,
      cpuMainThreadNone: 1,
      cpuMainThreadThread: 1,
      cpuV8HelpersNone: 1,
      cpuV8HelpersThread: 1,
    }),
  );
}

/** i: a CPU-bound handler, subjects chained or not, `thread` (the only isolation with more than one core for handlers). */
export async function cpuBoundPhase(options: FlowPhaseOptions): Promise<void> {
  const { em, workers } = options;
  const rounds: Record<string, number>[] = [];
  for (let r = 0; r < options.repeat; r++) {
    const rates: Record<string, number> = {};
    for (const [name, subjects] of [
      ['subjects50', SUBJECTS],
      ['subjectPerEvent', 0],
    ] as const) {
      const config = workers.config(em.url, `i-${name}`, { isolation: 'thread', idempotencyUrl: 'memory' });
      const phase = await workers.run(em, [config], options.cpuEvents, { env: { BENCH_HANDLER_SPIN_MS: SPIN_MS }, warmUp: 0, subjects });
      rates[name] = phase.eventsPerSecond;
    }
    rounds.push({ ...rates, subjects50ShareOfSubjectPerEvent: (rates.subjects50 as number) / (rates.subjectPerEvent as number) });
  }
  options.log('i_cpu_bound_handler_thread', options.summarize(rounds, { subjects50: 0, subjectPerEvent: 0, subjects50ShareOfSubjectPerEvent: 2 }));
}
