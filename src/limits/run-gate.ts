import { ErrorCodes } from '../errors.js';
import { systemClock, type Clock } from '../runtime/clock.js';
import type { CloudEvent } from '../types.js';
import type { Limiter, LimitsReader, PermitResult, RunPermit } from './limiter.js';

/** What the gate needs of a run about to start (the worker's HandlerRun). */
export interface GatedRun {
  handler: string;
  event: CloudEvent;
  /** Its lease's deadline: its permits expire then, and a wait in the lease must end well before. */
  deadlineMs: number;
  /** Its lease's signal: a wait ends when the lease stops. */
  signal: AbortSignal;
}

/**
 * What became of a run at the gate: it may start (and holds `permit` until it ends); or its wait is
 * longer than its lease can hold, so it should wait outside the lease until `retryAtMs` (deferred to
 * the store, or its event retried with the memory store); or its lease stopped while it waited.
 */
export type Admission = { kind: 'start'; permit: RunPermit } | { kind: 'later'; retryAtMs: number } | { kind: 'stopped' };

export interface RunGateOptions {
  clock?: Clock;
  /**
   * A wait stays in the lease only when it ends this long before the lease's deadline (the run needs
   * the time); a longer one is `later`. The worker gives a quarter of `--visibility`, as for retries.
   */
  holdBackMs: number;
  /**
   * The longest wait spent in the lease when the store can hold the run instead (a run waiting in its
   * lease keeps its place in the budget, which other handlers' runs could use): longer ones are
   * `later`. Default: no bound but the lease's (the memory store, where `later` means a redelivery).
   */
  maxInLeaseWaitMs?: number;
}

/** Paces kept at most (one per limit with refused runs lately); the oldest is forgotten. */
const MAX_PACES = 10_000;

/**
 * When the refused runs of one limit ask again. Every run refused now hears the same wait (until the
 * oldest start leaves the window), so without a pace they would all come back together and all but
 * one be refused again (and, deferred, cycle through the store each window). Instead each takes the
 * next free turn at the limit's pace (`per / max`), as a queue would: the first one at the wait, the
 * next one gap later, and so on. Per process: two replicas each book the same turns, and the runs
 * refused again take the next ones.
 */
class Pace {
  gapMs = 0;
  #lastMs = -Infinity;

  next(earliestMs: number): number {
    const atMs = Math.max(earliestMs, this.#lastMs + this.gapMs);
    this.#lastMs = atMs;
    return atMs;
  }
}

interface Pending {
  runs: { event: CloudEvent; ttlMs: number }[];
  answers: Promise<PermitResult[]>;
}

/**
 * The worker's one entry into the limits: `admit` before a run of a limited handler starts, `ended`
 * when it ends. Waiting for a permit is not a failure and spends no attempt: the run simply starts
 * later. The runs asking in one turn of the event loop share one store call per handler.
 */
export class RunGate {
  readonly #limiter: Limiter;
  readonly #clock: Clock;
  readonly #holdBackMs: number;
  readonly #maxInLeaseWaitMs: number;
  readonly #pending = new Map<string, Pending>();
  readonly #paces = new Map<string, Pace>();

  constructor(limiter: Limiter, options: RunGateOptions) {
    this.#limiter = limiter;
    this.#clock = options.clock ?? systemClock;
    this.#holdBackMs = options.holdBackMs;
    this.#maxInLeaseWaitMs = options.maxInLeaseWaitMs ?? Infinity;
  }

  /** Whether `handler` declares limits (the others never pass the gate). */
  has(handler: string): boolean {
    return this.#limiter.has(handler);
  }

  get limiter(): Limiter {
    return this.#limiter;
  }

  /** What the metrics (limit-gauges.ts) and the dev console read. */
  get metrics(): LimitsReader {
    return { scope: this.#limiter.scope, handlers: this.#limiter.handlers, view: (handler) => this.#limiter.view(handler) };
  }

  /** Asks for the run's permit, waiting in its lease while the wait fits there. Rejects when the store fails. */
  async admit(run: GatedRun): Promise<Admission> {
    for (;;) {
      if (run.signal.aborted) return { kind: 'stopped' };
      const answer = await this.#ask(run);
      if (answer.granted) {
        // Granted while the lease stopped: the run will not start, so the permit goes back.
        if (run.signal.aborted) {
          this.ended(answer.permit, run.event);
          return { kind: 'stopped' };
        }
        return { kind: 'start', permit: answer.permit };
      }
      const nowMs = this.#clock.now();
      const atMs = this.#paceOf(run, answer.paceMs).next(nowMs + answer.waitMs);
      // An adaptive rate moves with the downstream's answers: a run deferred to a later turn would keep
      // the pace it was booked at, so its waits stay in the lease, asking again at each turn.
      const inLeaseMs = this.#limiter.isAdaptive(run.handler) ? Infinity : this.#maxInLeaseWaitMs;
      if (atMs - nowMs > inLeaseMs || atMs > run.deadlineMs - this.#holdBackMs) return { kind: 'later', retryAtMs: atMs };
      await this.#limiter.wait(run.handler, atMs - nowMs, run.signal);
    }
  }

  /**
   * The run ended: its concurrency permits go back (a failure to say so is harmless: they expire with
   * the lease), and a `RetryLaterError` (a 429/503 of the forwarding handler) tells the adaptive rate.
   */
  ended(permit: RunPermit, event: CloudEvent, error?: { code?: string; retryAfterMs?: number }): void {
    if (error?.code === ErrorCodes.RETRY_LATER) this.#limiter.throttled(permit.handler, event, error.retryAfterMs ?? 0);
    this.#limiter.release(permit).catch(() => {});
  }

  /** The pace of the runs refused by the run's innermost limit (its key's, else its handler's). */
  #paceOf(run: GatedRun, paceMs: number): Pace {
    const id = this.#limiter.limitIdOf(run.handler, run.event);
    let pace = this.#paces.get(id);
    if (pace === undefined) {
      if (this.#paces.size >= MAX_PACES) this.#paces.delete(this.#paces.keys().next().value as string);
      this.#paces.set(id, (pace = new Pace()));
    }
    pace.gapMs = paceMs;
    return pace;
  }

  /** One store call for the runs of `handler` asking in this turn. */
  #ask(run: GatedRun): Promise<PermitResult> {
    let pending = this.#pending.get(run.handler);
    if (pending === undefined) {
      const runs: Pending['runs'] = [];
      const answers = Promise.resolve().then(() => {
        this.#pending.delete(run.handler);
        return this.#limiter.take(run.handler, runs);
      });
      this.#pending.set(run.handler, (pending = { runs, answers }));
    }
    const at = pending.runs.push({ event: run.event, ttlMs: run.deadlineMs - this.#clock.now() }) - 1;
    return pending.answers.then((answers) => answers[at] as PermitResult);
  }
}
