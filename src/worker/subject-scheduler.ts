/**
 * Runs a batch's events: at most `concurrency` at once, the events of one subject one after another
 * in stream order (a chain), different subjects side by side (CONTRACT --concurrency). After an
 * event fails, the rest of its chain is not started: a later update never overtakes an earlier one
 * that is being retried. A plain ready queue instead of a promise queue per event (p-queue's
 * bookkeeping was a visible share of the worker's time per event, docs/benchmarks.md), and a
 * callback instead of a promise per run: this is the per-event path.
 */
/** How a run ended: settled (ok, duplicate, dead-lettered), failed, or dropped before it started. */
export type RunEnd = 'settled' | 'failed' | 'unstarted';

/** How a run reports its end: once per run, at once or later. */
export type RunDone = (index: number, end: RunEnd) => void;

export interface ScheduleOptions {
  /** Number of events; they are identified by index. */
  count: number;
  subjectOf(index: number): string;
  /** Events in progress at once. */
  concurrency: number;
  /**
   * Events handed to `run` at once (default `concurrency`). Larger when the dispatcher queues runs
   * and enforces `concurrency` itself (a thread pool's lanes): then `run` resolves `unstarted` for
   * an event the dispatcher dropped before it started.
   */
  window?: number;
  /** Runs one event and calls `done` once when it ends. A run that throws counts as failed. */
  run(index: number, done: RunDone): void;
  /** Checked before each start: true once no further event may start (deadline, drain). */
  stopStarting(): boolean;
  /** Events in progress changed by `delta` (at most `concurrency` count, however large the window). */
  onInProgress?(delta: number): void;
}

export interface Schedule {
  /** Resolves once no event runs and none can start. */
  finished: Promise<void>;
  /** Events that settled so far. */
  readonly settled: number;
  /** Per index: 1 once the event was handed to `run` and did not end `unstarted`. */
  readonly started: Uint8Array;
}

export function runScheduled(options: ScheduleOptions): Schedule {
  const { count, concurrency, run, stopStarting, onInProgress } = options;
  const window = Math.max(concurrency, options.window ?? concurrency);
  // nextOfChain[i]: the index of the next event of i's subject, or -1.
  const nextOfChain = new Int32Array(count).fill(-1);
  const ready: number[] = [];
  const lastOfSubject = new Map<string, number>();
  for (let i = 0; i < count; i++) {
    const subject = options.subjectOf(i);
    const last = lastOfSubject.get(subject);
    if (last === undefined) ready.push(i);
    else nextOfChain[last] = i;
    lastOfSubject.set(subject, i);
  }

  const schedule = new ScheduleState(count);
  const started = schedule.started;
  let head = 0;
  let active = 0;
  // Past `concurrency`, handed-over events wait in the dispatcher: not in progress yet.
  const changeActive = (delta: number) => {
    const before = Math.min(active, concurrency);
    active += delta;
    const change = Math.min(active, concurrency) - before;
    if (change !== 0) onInProgress?.(change);
  };
  schedule.finished = new Promise<void>((resolve) => {
    // A run may report its end from inside `run`: the loop already going picks up what it freed.
    let pumping = false;
    const ended: RunDone = (index, end) => {
      changeActive(-1);
      if (end === 'settled') {
        schedule.settled++;
        const next = nextOfChain[index] as number;
        if (next !== -1) ready.push(next);
      } else if (end === 'unstarted') started[index] = 0;
      pump();
    };
    const pump = () => {
      if (pumping) return;
      pumping = true;
      while (active < window && head < ready.length && !stopStarting()) {
        const index = ready[head++] as number;
        started[index] = 1;
        changeActive(1);
        try {
          run(index, ended);
        } catch {
          ended(index, 'failed');
        }
      }
      pumping = false;
      if (active === 0) resolve();
    };
    pump();
  });
  return schedule;
}

/**
 * A class, not an object literal with a `settled` getter: V8 builds such a literal with its accessor
 * pair outside the young generation on every call, and the scavenger takes whatever old objects
 * point to as live, dead or not. The getter's closure held this schedule's context, and through
 * `run` the whole batch: every batch of events was promoted, ~2 MB per scavenge, with a major
 * collection every ~30,000 events (docs/benchmarks.md).
 */
class ScheduleState implements Schedule {
  /** Set by runScheduled once the state exists: the runs it starts count into it. */
  finished!: Promise<void>;
  settled = 0;
  readonly started: Uint8Array;

  constructor(count: number) {
    this.started = new Uint8Array(count);
  }
}
