import type { DeadLetterRecord } from '../dead-letter/sink.js';
import type { DispatchError, DispatchJob, DispatchResult, DispatchRun } from '../dispatch/types.js';
import { ErrorCodes } from '../errors.js';
import type { LoadedHandler } from '../handlers/loader.js';
import type { ClaimState, FailureHistory } from '../idempotency/store.js';
import type { RunTrace } from '../tracing/run-tracer.js';
import type { RunOutcome } from '../observability/worker-events.js';
import type { RunEnd, RunOwner } from './lease-view.js';
import { deadLetterRecord } from './dead-letter-record.js';
import { deferRun, type RunWait } from './deferral.js';
import { emitRunEnd, logDeadLettered, logFailedRun } from './run-report.js';
import { claimAgain, waitForClaim, type Claimed } from './key-claims.js';
import { retryDelayMs, UNCOUNTED_TRANSACTION_ENDS, uncountedRetryDelayMs } from './retry-delay.js';
import type { Admission } from '../limits/run-gate.js';

/**
 * One handler for one event of a held lease, from its claim to its recorded outcome: the run object
 * the dispatcher gets (`job`, and `end` called once with the result). What it records is in
 * docs/architecture.md ("One lease, from pull to ack", step 7, and "Deferred runs"). Its attempt is
 * the handler's on this event: the failed runs the store counted, plus one. A retry in the same
 * lease claims the key again first; a claim another owner holds is polled until done (a duplicate),
 * released or expired (ours), or the deadline.
 */
export class HandlerRun implements DispatchRun {
  readonly job: DispatchJob;
  readonly #event: RunOwner;
  /** Its key's position in the lease's keys. */
  readonly #k: number;
  readonly #key: string;
  /** A retry within the lease: its key is claimed again before it runs. */
  readonly #retry: boolean;
  /** Its process span (no-op with tracing off); the job carries its context to the handler. */
  readonly #trace: RunTrace;
  /** The key's failures before this run, as claimed. */
  #history: FailureHistory | undefined;
  #startedMs = 0;
  /** Handed to the dispatcher (its claim was new). */
  #dispatched = false;
  /** A chained run taken back before it started: what the dispatcher still reports is stale. */
  #withdrawn = false;
  /** Failed, and counted: when its next run may start. */
  #retryAtMs: number | undefined = undefined;
  /** Its handler's limits let it start (LeaseContext.limits): given back when it ends. */
  #permit: Extract<Admission, { kind: 'start' }>['permit'] | undefined;

  constructor(event: RunOwner, handler: LoadedHandler, k: number, retry = false) {
    this.#event = event;
    this.#k = k;
    this.#retry = retry;
    this.#key = event.lease.keys[k] as string;
    this.#history = retry ? undefined : event.lease.failures?.[k];
    this.job = { handler: handler.name, event: event.event, ctx: event.lease.jobContext, trace: undefined };
    this.#trace = event.lease.trace.process(this.job);
    this.job.trace = this.#trace.carrier;
    // Its call locks the key and commits the done mark with the handler's writes (src/dispatch/call-transaction.ts).
    if (handler.transactional === true) this.job.keys = [this.#key];
  }

  get handler(): string {
    return this.job.handler;
  }

  /** This handler's attempt on this event: its failed runs so far + 1. */
  get attempt(): number {
    return (this.#history?.failures ?? 0) + 1;
  }

  /** Handed to the dispatcher and not ended: a follower may be chained on it. */
  get dispatched(): boolean {
    return this.#dispatched;
  }

  /** Chained on `after`, the run before it in its subject (LeaseDispatch.startAfter): claimed new, no failures (the caller checked); starts the moment `after` ends ok. */
  startAfter(after: HandlerRun): void {
    const dispatch = this.#event.lease.dispatch;
    this.#startedMs = performance.now();
    this.#dispatched = true;
    (dispatch.startAfter as NonNullable<typeof dispatch.startAfter>)(this, after);
  }

  /** A chained run that has not started never will: true (it reports nothing more); false when it has started. */
  withdraw(): boolean {
    const dispatch = this.#event.lease.dispatch;
    this.#withdrawn = (dispatch.withdraw as NonNullable<typeof dispatch.withdraw>)(this);
    if (this.#withdrawn) this.#dispatched = false;
    return this.#withdrawn;
  }

  start(): void {
    const lease = this.#event.lease;
    const claim = this.#retry ? undefined : (lease.claims[this.#k] ?? 'busy');
    if (claim === 'new') return this.#dispatch();
    if (claim === 'done') return this.#skip('done');
    if (claim === 'busy' && lease.runsChainHeads) return this.#ended('unstarted'); // a deferred run another process took: it runs it
    (claim === undefined ? claimAgain(lease, this.#key, this.#trace) : waitForClaim(lease, this.#key, this.#trace)).then(
      (claimed) => this.#afterClaim(claimed),
      (err: unknown) => this.#storeFailed(err, claim === undefined ? 'claiming a retry' : 'waiting for a claim'),
    );
  }

  /** Defers the run to the store without running it: its chain, its retry time or its breaker holds it back. */
  defer(wait: RunWait): void {
    deferRun(this.#event.lease, this.#k, this.handler, this.job.event, wait).then(
      () => this.#ended('deferred'),
      (err: unknown) => this.#storeFailed(err, 'deferring a run', true),
    );
  }

  /** The dispatcher's report (DispatchRun). Never throws into the dispatcher. */
  end(result: DispatchResult): void {
    if (this.#withdrawn) return;
    this.#dispatched = false;
    if (this.#permit !== undefined)
      this.#event.lease.context.limits?.ended(this.#permit, this.job.event, result.status === 'failed' ? result.error : undefined);
    let recorded: RunEnd | Promise<RunEnd>;
    try {
      recorded = this.#record(result);
    } catch (err) {
      return this.#unexpected(err);
    }
    const error = result.status === 'failed' || result.status === 'permanent' ? result.error : undefined;
    if (typeof recorded === 'string') this.#ended(recorded, error);
    else
      recorded.then(
        (outcome) => this.#ended(outcome, error),
        (err: unknown) => this.#unexpected(err),
      );
  }

  /** The run's last word: its span ends with the outcome, then the event hears of it. */
  #ended(outcome: RunEnd, error?: DispatchError): void {
    this.#trace.end(outcome, error);
    this.#event.handlerEnded(this.#k, outcome, this.#retryAtMs);
  }

  #afterClaim(claimed: Claimed): void {
    this.#history = claimed.history;
    if (claimed.state === 'new') this.#dispatch();
    else this.#skip(claimed.state);
  }

  #dispatch(): void {
    const attempt = this.attempt;
    // The lease's context says attempt 1: a run with failures behind it gets its own.
    if (attempt !== 1) this.job.ctx = { ...this.job.ctx, attempt };
    const { context, deadlineMs, signal } = this.#event.lease;
    if (this.#permit === undefined && context.limits?.has(this.handler) === true) {
      return void context.limits.admit({ handler: this.handler, event: this.job.event, deadlineMs, signal }).then(
        (a) => this.#admitted(a),
        (err: unknown) => this.#storeFailed(err, 'taking a permit'),
      );
    }
    this.#startedMs = performance.now();
    this.#dispatched = true;
    this.#event.lease.dispatch.start(this);
  }

  /** Its limits answered: start; wait outside the lease (deferred, or its event retries then), no attempt spent; or its lease stopped. */
  #admitted(a: Admission): void {
    if (a.kind === 'start') return void ((this.#permit = a.permit), this.#dispatch());
    if (a.kind === 'stopped') return this.#ended('unstarted');
    if (this.#event.lease.context.deferred !== undefined) return this.defer({ reason: 'limit', retryAtMs: a.retryAtMs });
    this.#retryAtMs = a.retryAtMs;
    this.#ended('failed');
  }

  /** Done already (a duplicate), or another owner still holds the claim (failed: retried later). */
  #skip(state: ClaimState): void {
    const error = state === 'done' ? undefined : { message: `another worker still holds the claim on ${this.#key}`, code: ErrorCodes.STORE };
    if (error === undefined) this.#emit('duplicate', 0);
    else this.#emit('failed', 0, error);
    this.#event.lease.context.breakers.record(this.handler, 'none');
    this.#ended(state === 'done' ? 'duplicate' : 'failed', error);
  }

  /** The store failed before the handler ran: the event is retried later, and the process backs off. */
  #storeFailed(err: unknown, doing: string, release = false): void {
    const lease = this.#event.lease;
    // A deferral that may not have been stored: its claim goes back, the redelivery finds the key free.
    if (release) lease.release([this.#key]);
    lease.log.warn({ err, eventId: this.job.event.id, handler: this.handler }, `idempotency store failed while ${doing}`);
    lease.context.storeFailed(err);
    this.#skip('busy');
  }

  /** Recording an outcome threw: a bug (the event bus never throws). The event is retried, the lease goes on. */
  #unexpected(err: unknown): void {
    this.#event.lease.log.error({ err, eventId: this.job.event.id }, 'processing an event failed unexpectedly: it is retried');
    this.#retryAtMs = undefined;
    this.#ended('failed', { message: err instanceof Error ? err.message : String(err) });
  }

  #record(result: DispatchResult): RunEnd | Promise<RunEnd> {
    const { breakers } = this.#event.lease.context;
    // Dropped by the dispatcher before the handler ran: the claim is the lease's to release.
    if (result.status === 'unstarted') {
      breakers.record(this.handler, 'none');
      return 'unstarted';
    }
    const durationMs = result.durationMs ?? performance.now() - this.#startedMs;
    const lease = this.#event.lease;
    if (result.status === 'ok') {
      // Another worker's transaction committed the event first: its handler did not run here.
      if (result.duplicate === true) {
        breakers.record(this.handler, 'none');
        this.#emit('duplicate', durationMs);
        return 'duplicate';
      }
      // A transactional call committed its done mark with the handler's writes.
      if (this.job.keys === undefined) lease.doneMarks.add(this.#key);
      breakers.record(this.handler, 'ok');
      this.#emit('ok', durationMs);
      return 'ok';
    }
    const error = result.error;
    // Only a forced shutdown excuses a failure; a run cut at the lease deadline was too slow and counts.
    if (lease.signal.aborted && (lease.signal.reason as { code?: unknown } | undefined)?.code === ErrorCodes.ABORTED) {
      breakers.record(this.handler, 'none');
      lease.release([this.#key]);
      this.#emit('failed', durationMs, error);
      return 'failed';
    }
    if (this.job.keys !== undefined && UNCOUNTED_TRANSACTION_ENDS.has(error.code)) return this.#uncounted(error, durationMs);
    // A PermanentError is about the event, not the handler's dependency: the breaker does not weigh it.
    if (result.status === 'permanent') {
      breakers.record(this.handler, 'none');
      return this.#deadLetter('permanent', error, durationMs);
    }
    // A RetryLaterError is the handler pacing itself: it says nothing of the dependency.
    breakers.record(this.handler, error.code === ErrorCodes.RETRY_LATER ? 'none' : 'failed');
    if (this.attempt >= lease.context.maxAttempts) return this.#deadLetter('max-attempts', error, durationMs);
    return this.#countFailure(error, durationMs);
  }

  /**
   * A transactional call that did not commit through no fault of its handler (no attempt counted):
   * the store failed (the process backs off), another worker's transaction held the key (tried again
   * shortly, in the lease), or its batch call rolled back for another event's failure (at once).
   */
  #uncounted(error: DispatchError, durationMs: number): RunEnd {
    const lease = this.#event.lease;
    lease.context.breakers.record(this.handler, 'none');
    if (error.code === ErrorCodes.STORE) {
      lease.context.storeFailed(error);
      lease.release([this.#key]);
    } else this.#retryAtMs = lease.context.clock.now() + uncountedRetryDelayMs(error);
    this.#emit('failed', durationMs, error);
    return 'failed';
  }

  /** Stores the failure with the key (its count, when to run next), then reports it. */
  async #countFailure(error: DispatchError, durationMs: number): Promise<RunEnd> {
    const lease = this.#event.lease;
    const failedAtMs = lease.context.clock.now();
    const attempt = this.attempt;
    const retryAtMs = failedAtMs + retryDelayMs(attempt, error, lease.context.retryBackoff);
    let deferred = false;
    try {
      await this.#trace.call('idempotency failure', () => lease.context.store.recordFailures([{ key: this.#key, failedAtMs, retryAtMs }], lease.claimOwner));
      if (lease.context.deferred === undefined) this.#retryAtMs = retryAtMs;
      else {
        await this.#trace.call('idempotency defer', () => deferRun(lease, this.#k, this.handler, this.job.event, { reason: 'retry', retryAtMs }));
        deferred = true;
      }
    } catch (err) {
      // Not counted: the event runs again after the process's back-off, as the same attempt (an extra
      // run rather than a dead letter the handler did not earn). Its claim frees at the lease expiry.
      lease.log.warn({ err, eventId: this.job.event.id, handler: this.handler }, 'idempotency store failed while counting a failed run');
      lease.context.storeFailed(err);
    }
    logFailedRun(lease, this.job, attempt, retryAtMs - failedAtMs, error);
    this.#emit('failed', durationMs, error);
    return deferred ? 'deferred' : 'failed';
  }

  async #deadLetter(reason: DeadLetterRecord['reason'], error: DispatchError, durationMs: number): Promise<RunEnd> {
    const lease = this.#event.lease;
    const event = this.job.event;
    const record = deadLetterRecord(lease, this.job, reason, error, this.attempt, this.#history);
    try {
      await this.#trace.call('dead-letter write', () => lease.context.deadLetter.write(record));
    } catch (err) {
      // Not recorded anywhere: keep the event alive (requeue) rather than lose it.
      lease.log.error({ err, eventId: event.id, handler: this.handler }, 'dead-letter sink failed: the event is retried instead');
      lease.release([this.#key]);
      this.#emit('failed', durationMs, error);
      return 'failed';
    }
    lease.doneMarks.addDeadLettered(this.#key);
    logDeadLettered(lease, this.job, reason, this.attempt, error);
    this.#emit('dead_lettered', durationMs, error);
    return 'dead_lettered';
  }

  #emit(outcome: RunOutcome, durationMs: number, error?: DispatchError): void {
    emitRunEnd(this.#event.lease, this.job.event, this.handler, outcome, durationMs, this.attempt, error);
  }
}
