import type { DeadLetterRecord } from '../dead-letter/sink.js';
import type { DispatchError, DispatchJob, DispatchResult, DispatchRun } from '../dispatch/types.js';
import { ErrorCodes } from '../errors.js';
import type { ClaimState } from '../idempotency/store.js';
import { traceLogFields } from '../tracing/trace-context.js';
import type { RunTrace } from '../tracing/run-tracer.js';
import type { EventOutcome } from './events.js';
import type { LeaseEvent } from './lease-event.js';
import { sleep } from './timing.js';

const BUSY_POLL_FIRST_MS = 100;
const BUSY_POLL_MAX_MS = 1_000;

/** How one handler run ended for its event: an outcome, or `unstarted` (the dispatcher never called the handler). */
export type RunOutcome = EventOutcome | 'unstarted';

/**
 * One handler for one event of a held lease, from its claim to its recorded outcome: the run object
 * the dispatcher gets (`job`, and `end` called once with the result). What it records (STYLE 8:
 * handlers say what happened, the framework decides):
 *
 * - ok -> done mark; failed -> claim released (retried on redelivery);
 * - PermanentError, or a failure at attempt >= --max-attempts -> dead-letter record, then done mark;
 * - a forced-shutdown abort is never dead-lettered: the handler did not fail, the process stopped;
 * - `unstarted`: nothing (the lease releases the claims of what never ran).
 *
 * A claim another owner holds (the lease moved between workers while the old holder may still run
 * the handler) is polled until done (a duplicate), released or expired (ours), or the deadline.
 */
export class HandlerRun implements DispatchRun {
  readonly job: DispatchJob;
  readonly #event: LeaseEvent;
  /** Its key's position in the lease's keys. */
  readonly #k: number;
  readonly #key: string;
  /** Its process span (a no-op with tracing off); the job carries its context to the handler. */
  readonly #trace: RunTrace;
  #startedMs = 0;
  /** Handed to the dispatcher (its claim was new). */
  #dispatched = false;
  dispatcherRecord: unknown = undefined;

  constructor(event: LeaseEvent, handler: string, k: number) {
    this.#event = event;
    this.#k = k;
    this.#key = event.lease.keys[k] as string;
    this.job = { handler, event: event.event, ctx: event.lease.jobContext, trace: undefined };
    this.#trace = event.lease.trace.process(this.job);
    this.job.trace = this.#trace.carrier;
  }

  get handler(): string {
    return this.job.handler;
  }

  /** Handed to the dispatcher and not ended: a follower may be chained on it. */
  get dispatched(): boolean {
    return this.#dispatched;
  }

  /**
   * The next event of a subject, chained on the run before it (LeaseDispatch.startAfter): its claim
   * is new (the caller checked), and it starts where `after` runs the moment that ends ok.
   */
  startAfter(after: HandlerRun): void {
    const dispatch = this.#event.lease.dispatch;
    this.#startedMs = performance.now();
    this.#dispatched = true;
    (dispatch.startAfter as NonNullable<typeof dispatch.startAfter>)(this, after);
  }

  /** A chained run that has not started never will: true; false when it has started. */
  withdraw(): boolean {
    const dispatch = this.#event.lease.dispatch;
    return (dispatch.withdraw as NonNullable<typeof dispatch.withdraw>)(this);
  }

  start(): void {
    const claim = this.#event.lease.claims[this.#k] ?? 'busy';
    if (claim === 'new') return this.#dispatch();
    if (claim === 'done') return this.#skip('done');
    this.#waitForClaim().then(
      (state) => {
        if (state === 'new') this.#dispatch();
        else this.#skip(state);
      },
      (err: unknown) => {
        this.#event.lease.log.warn({ err, eventId: this.job.event.id, handler: this.handler }, 'idempotency store failed while waiting for a claim');
        this.#skip('busy');
      },
    );
  }

  /** The dispatcher's report (DispatchRun). Never throws into the dispatcher. */
  end(result: DispatchResult): void {
    this.#dispatched = false;
    let recorded: RunOutcome | Promise<RunOutcome>;
    try {
      recorded = this.#record(result);
    } catch (err) {
      return this.#unexpected(err);
    }
    const error = result.status === 'failed' || result.status === 'permanent' ? result.error : undefined;
    if (typeof recorded === 'string') this.#ended(recorded, error);
    else recorded.then((outcome) => this.#ended(outcome, error), (err: unknown) => this.#unexpected(err));
  }

  /** The run's last word: its span ends with the outcome, then the event hears of it. */
  #ended(outcome: RunOutcome, error?: DispatchError): void {
    this.#trace.end(outcome, error);
    this.#event.handlerEnded(this.#k, outcome);
  }

  #dispatch(): void {
    this.#startedMs = performance.now();
    this.#dispatched = true;
    this.#event.lease.dispatch.start(this);
  }

  /** Done already (a duplicate), or another owner still holds the claim (failed: retried later). */
  #skip(state: ClaimState): void {
    const error = state === 'done' ? undefined : { message: `another worker still holds the claim on ${this.#key}`, code: ErrorCodes.STORE };
    if (error === undefined) this.#emit('duplicate', 0);
    else this.#emit('failed', 0, error);
    this.#ended(state === 'done' ? 'duplicate' : 'failed', error);
  }

  /** Recording an outcome threw: a bug (the event bus never throws). The event is retried, the lease goes on. */
  #unexpected(err: unknown): void {
    this.#event.lease.log.error({ err, eventId: this.job.event.id }, 'processing an event failed unexpectedly: it is retried');
    this.#ended('failed', { message: err instanceof Error ? err.message : String(err) });
  }

  async #waitForClaim(): Promise<ClaimState> {
    const lease = this.#event.lease;
    let waitMs = BUSY_POLL_FIRST_MS;
    for (;;) {
      if (lease.signal.aborted || Date.now() + waitMs >= lease.deadlineMs) return 'busy';
      await sleep(waitMs, lease.signal);
      if (lease.signal.aborted) return 'busy';
      const [state] = await this.#trace.call('idempotency claim', () => lease.context.store.claim([this.#key], lease.claimOwner, Math.max(1, lease.expiresAtMs - Date.now())));
      if (state !== 'busy') return state ?? 'busy';
      waitMs = Math.min(BUSY_POLL_MAX_MS, waitMs * 2);
    }
  }

  #record(result: DispatchResult): RunOutcome | Promise<RunOutcome> {
    // Dropped by the dispatcher before the handler ran: the claim is the lease's to release.
    if (result.status === 'unstarted') return 'unstarted';
    const durationMs = result.durationMs ?? performance.now() - this.#startedMs;
    const lease = this.#event.lease;
    const { firstFailures, maxAttempts } = lease.context;
    if (result.status === 'ok') {
      lease.doneMarks.add(this.#key);
      firstFailures.take(this.#key);
      this.#emit('ok', durationMs);
      return 'ok';
    }
    const error = result.error;
    // Only a forced shutdown excuses a failure; a run cut at the lease deadline was too slow and counts.
    const shutdown = lease.signal.aborted && (lease.signal.reason as { code?: unknown } | undefined)?.code === ErrorCodes.ABORTED;
    if (shutdown || (result.status !== 'permanent' && lease.batch.attempt < maxAttempts)) {
      firstFailures.note(this.#key);
      lease.release([this.#key]);
      lease.log.warn({ eventId: this.job.event.id, handler: this.handler, attempt: lease.batch.attempt, err: error, ...traceLogFields(this.job.trace) }, `handler ${this.handler} failed: ${error.message}`);
      this.#emit('failed', durationMs, error);
      return 'failed';
    }
    return this.#deadLetter(result.status === 'permanent' ? 'permanent' : 'max-attempts', error, durationMs);
  }

  async #deadLetter(reason: DeadLetterRecord['reason'], error: DispatchError, durationMs: number): Promise<RunOutcome> {
    const lease = this.#event.lease;
    const event = this.job.event;
    const firstFailedAt = lease.context.firstFailures.take(this.#key);
    const record: DeadLetterRecord = {
      event,
      handler: this.handler,
      reason,
      error,
      attempt: lease.batch.attempt,
      generation: lease.batch.generation,
      workerId: lease.workerId,
      leaseId: lease.batch.leaseId,
      ...(firstFailedAt === undefined ? {} : { firstFailedAt }),
      deadLetteredAt: new Date().toISOString(),
    };
    try {
      await this.#trace.call('dead-letter write', () => lease.context.deadLetter.write(record));
    } catch (err) {
      // Not recorded anywhere: keep the event alive (requeue) rather than lose it.
      lease.log.error({ err, eventId: event.id, handler: this.handler }, 'dead-letter sink failed: the event is retried instead');
      lease.release([this.#key]);
      this.#emit('failed', durationMs, error);
      return 'failed';
    }
    lease.doneMarks.add(this.#key);
    lease.log.error(
      { eventId: event.id, type: event.type, handler: this.handler, attempt: lease.batch.attempt, reason, err: error, ...traceLogFields(this.job.trace) },
      `event ${event.id} dead-lettered for ${this.handler} (${reason}): ${error.message}`,
    );
    this.#emit('dead_lettered', durationMs, error);
    return 'dead_lettered';
  }

  #emit(outcome: EventOutcome, durationMs: number, error?: DispatchError): void {
    const lease = this.#event.lease;
    const event = this.job.event;
    // Two literals rather than a spread: this runs once per handler run.
    if (error === undefined) lease.context.events.emit('event:done', { workerId: lease.workerId, event, handler: this.handler, outcome, durationMs });
    else {
      const reported = error.code === undefined ? { message: error.message } : { message: error.message, code: error.code };
      lease.context.events.emit('event:done', { workerId: lease.workerId, event, handler: this.handler, outcome, durationMs, error: reported });
    }
  }
}
