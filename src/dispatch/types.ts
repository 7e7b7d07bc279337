import type { CloudEvent } from '../types.js';

/** What the batch knows about the delivery of one event; becomes the handler's ctx. */
export interface JobContext {
  attempt: number;
  generation: number;
  workerId: string;
  leaseId: string;
  /** Epoch ms of the batch deadline (lease expiry minus the safety margin). */
  deadlineMs: number;
}

/** One handler run for one event. Plain data: it crosses into a worker thread by structured clone. */
export interface DispatchJob {
  /** Handler name (its path in the handlers folder without extension, or `@forward`). */
  handler: string;
  event: CloudEvent;
  ctx: JobContext;
}

/** A handler failure in plain data (structured clone drops prototypes: branch on `code`). */
export interface DispatchError {
  message: string;
  stack?: string;
  code?: string;
}

export type DispatchOutcome = { status: 'ok' } | { status: 'failed' | 'permanent'; error: DispatchError };

/**
 * What a dispatcher reports. `unstarted`: a dispatcher that queues runs (see
 * {@link Dispatcher.queuesRuns}) dropped the run before the handler was called (drain, the
 * deadline, or its thread died first): not a failure, the event was not tried.
 */
export type DispatchResult = (DispatchOutcome & { /** How long the handler ran, when the dispatcher timed it itself (a queued run waits before it starts). */ durationMs?: number }) | { status: 'unstarted' };

/**
 * The runs of one batch in one worker, for a dispatcher that queues them: at most `limit` events
 * (`--concurrency`) run at once, in the order dispatched; the runs of one event (`unit`) start
 * together. Once `stop` aborts (drain), runs not started yet end `unstarted`.
 */
export interface BatchLane {
  readonly id: number;
  readonly limit: number;
  readonly stop: AbortSignal;
}

/**
 * Runs handlers: in-process (`--isolation none`) or in piscina worker threads (`--isolation thread`).
 * `dispatch` never rejects: every failure, timeout, abort or crash becomes an outcome.
 */
export interface Dispatcher {
  /**
   * True when the dispatcher enforces a lane's limit itself: the batch then hands it every run that
   * may start (not only `--concurrency` of them), so a thread starts the next run as soon as one
   * ends instead of waiting for a round trip through the main thread.
   */
  readonly queuesRuns?: boolean;
  /** `lane` and `unit` (the event's index in the batch) only matter to a dispatcher that queues runs. */
  dispatch(job: DispatchJob, signal: AbortSignal, lane?: BatchLane, unit?: number): Promise<DispatchResult>;
  /**
   * The same run reported through `onEnd` (called once, possibly at once) instead of a promise: a
   * dispatcher that runs handlers on the calling thread offers it, and the worker then spends no
   * promise per run. `onEnd` must not throw.
   */
  dispatchThen?(job: DispatchJob, signal: AbortSignal, onEnd: (result: DispatchResult) => void): void;
  /** Idempotent. Ends handler runs still going (a thread pool terminates its threads). */
  close(): Promise<void>;
}
