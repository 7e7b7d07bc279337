import type { SetupFailure, TeardownFailure } from '../handlers/life-cycle.js';
import type { TraceCarrier } from '../tracing/trace-context.js';
import type { CloudEvent, JobContext } from '../types.js';

/** One handler run for one event. Plain data: it crosses into a worker thread by structured clone. */
export interface DispatchJob {
  /** Handler name (its path in the handlers folder without extension, or `@forward`). */
  handler: string;
  event: CloudEvent;
  /** A batch handler's call: its events, in stream order (`event` is the first). */
  events?: CloudEvent[];
  ctx: JobContext;
  /**
   * A transactional handler's call: the idempotency keys of its events, in the order of `events` (or
   * the one of `event`). The call locks them in its transaction, and commits their done marks with
   * the handler's writes (src/dispatch/call-transaction.ts).
   */
  keys?: string[];
  /** The namespace of `keys` when it is not the worker's `--idempotency-prefix` (a dead-letter replay: its record's). */
  keyPrefix?: string;
  /** Tracing on: the run's process span, made where the lease is held; the handler runs in its context. */
  trace?: TraceCarrier | undefined;
}

/** A handler failure in plain data (structured clone drops prototypes: branch on `code`). */
export interface DispatchError {
  message: string;
  stack?: string;
  code?: string;
  /** The handler asked to be tried again after this many ms (RetryLaterError, a `retryAfterMs` on the error). */
  retryAfterMs?: number;
}

/**
 * How a handler call ended where it ran (src/dispatch/run-handler.ts). A batch call that ended with
 * some events not ok is `ok` with `results`, one per event of the call (src/dispatch/batching.ts
 * hands each to its event). `duplicate`: a transactional call found the event's done mark in its
 * transaction (another worker committed it first): the handler did not run for it.
 */
export type CallOutcome = { status: 'ok'; results?: readonly CallOutcome[]; duplicate?: true } | { status: 'failed' | 'permanent'; error: DispatchError };

/**
 * How a run ended, as a dispatcher reports it to the worker: its call's outcome, or `unstarted`:
 * the handler was never called (its thread died first, or the run reached its thread after the lease
 * deadline): not a failure, the event was not tried.
 */
export type DispatchResult =
  (CallOutcome & { /** How long the handler ran, when the dispatcher timed it where it ran. */ durationMs?: number }) | { status: 'unstarted' };

/**
 * One handler run handed to a dispatcher: what to run, and where its end goes. The worker's run
 * object implements it (src/worker/handler-run.ts), so a run costs the dispatcher no callback of its
 * own.
 */
export interface DispatchRun {
  readonly job: DispatchJob;
  /** Called once with how the run ended, possibly before `start` returned. Must not throw. */
  end(result: DispatchResult): void;
}

/** The runs of one lease (Dispatcher.open). */
export interface LeaseDispatch {
  /** Runs `run.job` now; every failure, timeout, abort or crash becomes a result. */
  start(run: DispatchRun): void;
  /**
   * Offered by a dispatcher whose runs end away from the main thread (threads): runs `run` where
   * `after` (a run started earlier, of any lease of this dispatcher) runs, the moment `after` ends
   * ok there, so that a subject's next event starts without a round trip through the main thread.
   * When `after` does not end ok, or `run`'s deadline passes first, `run` ends `unstarted`.
   */
  startAfter?(run: DispatchRun, after: DispatchRun): void;
  /**
   * For a run given to `startAfter`: true when it has not started and now never will (it ends
   * `unstarted`, if it had not already); false when it has started (its end comes as usual).
   */
  withdraw?(run: DispatchRun): boolean;
  /** The lease is done with the dispatcher (its runs ended, or it stopped waiting for them). */
  close(): void;
}

export interface SetUpOptions {
  signal: AbortSignal;
  onFailure(failure: SetupFailure): void;
}

/**
 * Runs handlers: in-process (`--isolation none`) or in piscina worker threads (`--isolation thread`),
 * one lease at a time: `open(signal)` per lease, `start(run)` per handler run, its end by callback.
 * The worker keeps the budget and the subject order; a dispatcher runs what it is given at once.
 */
export interface Dispatcher {
  /** The runs of one lease: `signal` aborts them (the lease deadline, a forced shutdown). */
  open(signal: AbortSignal): LeaseDispatch;
  /**
   * Resolves once every handler's `setup` succeeded where handlers run (once in-process, in every
   * thread of a pool); failures are retried with backoff and reported. Rejects when `signal` aborts.
   */
  setUp(options: SetUpOptions): Promise<void>;
  /** Runs the handlers' `teardown` where they were set up, bounded by `timeoutMs`. Never rejects. */
  tearDown(timeoutMs: number): Promise<TeardownFailure[]>;
  /** Idempotent. Ends handler runs still going (a thread pool terminates its threads). */
  close(): Promise<void>;
}
