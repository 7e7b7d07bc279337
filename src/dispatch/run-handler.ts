import { ErrorCodes } from '../errors.js';
import type { HandlerContext, HandlerLogger } from '../handlers/define.js';
import type { TransactionClient } from '../handlers/transaction-client.js';
import type { LoadedHandler } from '../handlers/loader.js';
import { atDeadline, whenAborted, type Watch } from '../runtime/abort-fanout.js';
import { systemClock, type Clock } from '../runtime/clock.js';
import { withConsoleOf } from '../observability/console-capture.js';
import { handlerScope } from '../tracing/handler-scope.js';
import { traceLogFields } from '../tracing/trace-context.js';
import type { EffectTransaction } from '../idempotency/postgres-transactions.js';
import type { CloudEvent } from '../types.js';
import { abortedOutcome, batchOutcome, OK, outcomeOfError, type AbortCause } from './call-outcomes.js';
import { runInTransaction, type CallTransactions, type TransactionalCall } from './call-transaction.js';
import type { DispatchJob, CallOutcome } from './types.js';

export type { Clock } from '../runtime/clock.js';

/** Creates the logger a handler sees; called at most once per run, on first use of `ctx.log`. */
export type HandlerLoggerFactory = (bindings: Record<string, unknown>) => HandlerLogger;

/** Where a run's outcome goes: called once (a worker's run object, or a promise's resolve). Must not throw. */
export interface OutcomeReceiver {
  end(outcome: CallOutcome): void;
}

export interface RunHandlerOptions {
  /** Aborts the run early (shutdown, or the lease's cut at its deadline); the deadline and the timeout abort it anyway. */
  signal?: AbortSignal | undefined;
  /**
   * Instead of `signal`: subscribes the run's abort to the caller's own cancellation (a worker thread
   * hears aborts on a channel and keeps no AbortController per run); returns its cancel.
   */
  abortOn?: ((abort: (reason: unknown) => void) => Watch) | undefined;
  logger: HandlerLoggerFactory;
  /** Timeout of a handler that declares none (`--handler-timeout`); default: the lease deadline. */
  defaultTimeoutMs?: number | undefined;
  /** Default: the system clock. */
  clock?: Clock | undefined;
  /** Where a transactional handler's calls open their transactions (the store's database, from this thread). */
  transactions?: (() => Promise<CallTransactions>) | undefined;
}

/** When the run must end: the earlier of the lease deadline and the handler's own timeout. */
export function effectiveDeadlineMs(handler: Pick<LoadedHandler, 'timeoutMs'>, job: DispatchJob, startMs: number, defaultTimeoutMs?: number): number {
  const timeoutMs = handler.timeoutMs ?? defaultTimeoutMs;
  return timeoutMs === undefined ? job.ctx.leaseDeadlineMs : Math.min(job.ctx.leaseDeadlineMs, startMs + timeoutMs);
}

/**
 * Runs one handler for one event with a `ctx.signal` that aborts at the deadline (or on `signal`),
 * and never waits past it: a handler that ignores its signal is left behind and the run counts as
 * failed, so the lease can be acked before it expires. Never rejects.
 *
 * Built for the hot path (one call per event): the AbortController behind `ctx.signal` is created
 * only when the handler reads it, and the caller's signal and the lease deadline are watched through
 * listeners and a timer shared by every run of the lease (a timer of its own only for a shorter
 * handler timeout). A run's state is one object and `ctx` another with its accessors on the
 * prototype, because an object literal with getters and a closure per callback would cost more per
 * run than a no-op handler itself.
 */
export function runHandler(handler: LoadedHandler, job: DispatchJob, options: RunHandlerOptions): Promise<CallOutcome> {
  return new Promise<CallOutcome>((resolve) => startHandlerCall(handler, job, options, { end: resolve }));
}

/**
 * {@link runHandler} reporting to `receiver` (once; at once when the run cannot start): for a caller
 * on the per-event path, without the promise, its resolving functions and the reaction it would
 * chain on it.
 */
export function startHandlerCall(handler: LoadedHandler, job: DispatchJob, options: RunHandlerOptions, receiver: OutcomeReceiver): void {
  const handle = handler.handle;
  if (handle === undefined && handler.batch === undefined)
    return receiver.end({ status: 'failed', error: { message: `handler ${handler.name} has no handle function`, code: ErrorCodes.HANDLER_LOAD } });
  const clock = options.clock ?? systemClock;
  const startMs = clock.now();
  const deadlineMs = effectiveDeadlineMs(handler, job, startMs, options.defaultTimeoutMs);
  if (options.signal?.aborted)
    return receiver.end({ status: 'failed', error: { message: `handler ${handler.name} was aborted before it started`, code: ErrorCodes.ABORTED } });
  if (deadlineMs <= startMs)
    return receiver.end({
      status: 'failed',
      error: { message: `handler ${handler.name} had no time left before the deadline`, code: ErrorCodes.HANDLER_TIMEOUT },
    });
  new HandlerCall(handler, job, options, clock, startMs, deadlineMs, receiver).start(handle);
}

/** One call of a handler's `handle` (or `handleBatch`) where it runs: ends once, with the first of the handler's outcome and an abort. */
class HandlerCall implements TransactionalCall {
  readonly handler: LoadedHandler;
  readonly job: DispatchJob;
  readonly options: RunHandlerOptions;
  readonly deadlineMs: number;
  readonly #clock: Clock;
  readonly #startMs: number;
  readonly #receiver: OutcomeReceiver;
  #ended = false;
  #controller: AbortController | undefined = undefined;
  #abortReason: Error | undefined = undefined;
  #deadlineWatch: Watch | undefined = undefined;
  #signalWatch: Watch | undefined = undefined;
  /** A transactional call's open transaction: `ctx.tx` is its client. */
  #transaction: EffectTransaction | undefined = undefined;

  constructor(
    handler: LoadedHandler,
    job: DispatchJob,
    options: RunHandlerOptions,
    clock: Clock,
    startMs: number,
    deadlineMs: number,
    receiver: OutcomeReceiver,
  ) {
    this.handler = handler;
    this.job = job;
    this.options = options;
    this.deadlineMs = deadlineMs;
    this.#clock = clock;
    this.#startMs = startMs;
    this.#receiver = receiver;
  }

  start(handle: LoadedHandler['handle']): void {
    const clock = this.#clock;
    const ownTimeout = this.deadlineMs < this.job.ctx.leaseDeadlineMs;
    if (ownTimeout || clock !== systemClock) {
      // A fake clock (durable-worker/testing) gets a timer per run, so a finished run leaves none.
      const afterMs = this.deadlineMs - this.#startMs;
      const timer = clock.setTimeout(() => this.abort(ownTimeout ? { kind: 'timeout', afterMs } : { kind: 'deadline' }), afterMs);
      this.#deadlineWatch = { cancel: () => clock.clearTimeout(timer) };
    } else {
      // The lease deadline: one timer shared by every run of the lease.
      this.#deadlineWatch = atDeadline(clock, this.deadlineMs, () => this.abort({ kind: 'deadline' }));
    }
    const external = this.options.signal;
    if (external !== undefined) this.#signalWatch = whenAborted(external, (reason) => this.abort({ kind: 'signal', reason }));
    else if (this.options.abortOn !== undefined) this.#signalWatch = this.options.abortOn((reason) => this.abort({ kind: 'signal', reason }));

    if (this.handler.transactional === true) {
      void runInTransaction(this, this.options.transactions);
      return;
    }
    let result: unknown;
    // A batch handler's call (src/dispatch/batching.ts): its events, and one outcome for all of them.
    const batch = this.handler.batch;
    try {
      result = this.invoke(this.job.events ?? [this.job.event]);
    } catch (err) {
      this.finish(outcomeOfError(err));
      return;
    }
    Promise.resolve(result).then(
      batch === undefined ? () => this.finish(OK) : (value: unknown) => this.finish(batchOutcome(value, this.job.events?.length ?? 1, this.handler.name)),
      (err: unknown) => this.finish(outcomeOfError(err)),
    );
  }

  /** Calls the handler: a single-event handler with the first of `events`, a batch handler with them all. */
  invoke(events: readonly CloudEvent[]): unknown {
    // Tracing: the handler runs in its process span's context (the job carries it only when tracing is on).
    const trace = this.job.trace;
    return trace === undefined ? this.#call(events) : handlerScope().run(trace, () => this.#call(events));
  }

  #call(events: readonly CloudEvent[]): unknown {
    const batch = this.handler.batch;
    const ctx = new RunContext(this);
    // The handler's console lines become records of this run (observability/console-capture.ts).
    return withConsoleOf(
      () => ctx.log,
      () =>
        batch === undefined
          ? (this.handler.handle as NonNullable<LoadedHandler['handle']>)(events[0] as never, ctx)
          : batch.handleBatch(events as never[], ctx),
    );
  }

  get ended(): boolean {
    return this.#ended;
  }

  now(): number {
    return this.#clock.now();
  }

  hold(transaction: EffectTransaction): void {
    this.#transaction = transaction;
  }

  /** `ctx.tx`: the open transaction's client (a transactional call), else undefined. */
  get transaction(): EffectTransaction | undefined {
    return this.#transaction;
  }

  /** `ctx.signal`: created on first read, already aborted if the run was. */
  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.#abortReason !== undefined) this.#controller.abort(this.#abortReason);
    }
    return this.#controller.signal;
  }

  finish(outcome: CallOutcome): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#deadlineWatch?.cancel();
    this.#signalWatch?.cancel();
    this.#receiver.end(outcome);
  }

  /**
   * A handler that resolves after its run was aborted is not trusted: the first outcome stands. A
   * transactional call whose commit was sent already ends with that commit's outcome.
   */
  abort(cause: AbortCause): void {
    if (this.#ended) return;
    const ended = abortedOutcome(this.handler, cause);
    this.#abortReason = ended.reason;
    // Before the handler hears of the abort: a handler that goes on finds its transaction gone. A
    // commit already sent is the call's outcome instead: runInTransaction reports it once it answers.
    const committing = this.#transaction?.destroy(ended.reason) === 'committing';
    this.#controller?.abort(ended.reason);
    if (!committing) this.finish(ended.outcome);
  }
}

/** The `ctx` a handler gets. */
class RunContext implements HandlerContext {
  readonly #run: HandlerCall;
  #log: HandlerLogger | undefined = undefined;
  readonly attempt: number;
  readonly deliveryAttempt: number;
  readonly generation: number;
  readonly workerId: string;
  readonly leaseId: string;
  readonly handlerName: string;
  readonly deadlineMs: number;

  constructor(run: HandlerCall) {
    this.#run = run;
    const jobContext = run.job.ctx;
    this.attempt = jobContext.attempt;
    this.deliveryAttempt = jobContext.deliveryAttempt;
    this.generation = jobContext.generation;
    this.workerId = jobContext.workerId;
    this.leaseId = jobContext.leaseId;
    this.handlerName = run.handler.name;
    this.deadlineMs = run.deadlineMs;
  }

  get signal(): AbortSignal {
    return this.#run.signal;
  }

  get tx(): TransactionClient | undefined {
    return this.#run.transaction?.client;
  }

  /** What the handler's setup returned in this thread (src/handlers/life-cycle.ts). */
  get resources(): unknown {
    return this.#run.handler.resources;
  }

  get log(): HandlerLogger {
    if (this.#log === undefined) {
      const { job, handler, options } = this.#run;
      // A batch call's lines name how many events it holds, not one of them; tracing on: trace_id and span_id of its process span.
      const about = job.events === undefined ? { eventId: job.event.id } : { events: job.events.length };
      const bindings = {
        handler: handler.name,
        ...about,
        workerId: job.ctx.workerId,
        leaseId: job.ctx.leaseId,
        generation: job.ctx.generation,
        attempt: job.ctx.attempt,
      };
      this.#log = options.logger(job.trace === undefined ? bindings : { ...bindings, ...traceLogFields(job.trace) });
    }
    return this.#log;
  }
}
