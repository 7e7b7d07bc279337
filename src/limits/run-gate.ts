import { ErrorCodes } from '../errors.js';
import { systemClock, type Clock } from '../runtime/clock.js';
import type { CloudEvent } from '../types.js';
import type { Limiter, PermitResult, RunPermit } from './limiter.js';

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
  readonly #pending = new Map<string, Pending>();

  constructor(limiter: Limiter, options: RunGateOptions) {
    this.#limiter = limiter;
    this.#clock = options.clock ?? systemClock;
    this.#holdBackMs = options.holdBackMs;
  }

  /** Whether `handler` declares limits (the others never pass the gate). */
  has(handler: string): boolean {
    return this.#limiter.has(handler);
  }

  get limiter(): Limiter {
    return this.#limiter;
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
      if (nowMs + answer.waitMs > run.deadlineMs - this.#holdBackMs) return { kind: 'later', retryAtMs: nowMs + answer.waitMs };
      await this.#limiter.wait(run.handler, answer.waitMs, run.signal);
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
