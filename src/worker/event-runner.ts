import type { Logger } from 'pino';
import type { DeadLetterRecord, DeadLetterSink } from '../dead-letter/sink.js';
import type { BatchLane, DispatchError, DispatchResult, Dispatcher, JobContext } from '../dispatch/types.js';
import { ErrorCodes } from '../errors.js';
import type { ClaimState, IdempotencyStore } from '../idempotency/store.js';
import type { CloudEvent } from '../types.js';
import type { EventOutcome, WorkerEmitter } from './events.js';
import type { DoneMarkWriter } from './done-marks.js';
import { sleep } from './timing.js';

/** What one handler run for one event needs from the worker (a narrow view, STYLE 3). */
export interface EventRunnerContext {
  workerId: string;
  store: IdempotencyStore;
  dispatcher: Dispatcher;
  deadLetter: DeadLetterSink;
  events: WorkerEmitter;
  logger: Logger;
  /** `--max-attempts`: from this batch attempt on, a failure is dead-lettered. */
  maxAttempts: number;
  firstFailures: FirstFailures;
}

/** The lease an event is processed under. */
export interface LeaseScope {
  leaseId: string;
  generation: number;
  attempt: number;
  /** Claim owner: `${workerId}:${leaseId}:${generation}`. */
  owner: string;
  deadlineMs: number;
  expiresAtMs: number;
  /** Aborts at the batch deadline or at forced shutdown. */
  signal: AbortSignal;
  /** Store writes (done marks, releases) the ack must wait for. */
  pendingWrites: Promise<unknown>[];
  /** Done marks, written a turn's worth at a time into `pendingWrites`. */
  doneMarks: DoneMarkWriter;
  /** The handler ctx of every run of the batch: one object, so a thread message carries it once. */
  jobContext: JobContext;
  /** When the dispatcher queues runs: the batch's lane (it enforces `--concurrency`). */
  lane: BatchLane | undefined;
}

/**
 * When each key first failed in this process, for `firstFailedAt` in dead-letter records. Bounded:
 * a record without it is still complete; memory is not spent on keys that later succeed.
 */
export class FirstFailures {
  readonly #times = new Map<string, string>();
  readonly #max: number;

  constructor(max = 10_000) {
    this.#max = max;
  }

  note(key: string): void {
    if (this.#times.has(key)) return;
    if (this.#times.size >= this.#max) {
      const oldest = this.#times.keys().next();
      if (oldest.done !== true) this.#times.delete(oldest.value);
    }
    this.#times.set(key, new Date().toISOString());
  }

  take(key: string): string | undefined {
    if (this.#times.size === 0) return undefined;
    const at = this.#times.get(key);
    this.#times.delete(key);
    return at;
  }
}

const BUSY_POLL_FIRST_MS = 100;
const BUSY_POLL_MAX_MS = 1_000;

/**
 * Another owner holds the key's claim: the lease moved between workers (an expired lease handed
 * out again) while the old holder may still be running the handler. Poll until it is done (skip),
 * released or expired (ours now), or our deadline comes (failed; the batch is retried later).
 */
async function waitForClaim(ctx: EventRunnerContext, lease: LeaseScope, key: string): Promise<ClaimState> {
  let waitMs = BUSY_POLL_FIRST_MS;
  for (;;) {
    if (lease.signal.aborted || Date.now() + waitMs >= lease.deadlineMs) return 'busy';
    await sleep(waitMs, lease.signal);
    if (lease.signal.aborted) return 'busy';
    const [state] = await ctx.store.claim([key], lease.owner, Math.max(1, lease.expiresAtMs - Date.now()));
    if (state !== 'busy') return state ?? 'busy';
    waitMs = Math.min(BUSY_POLL_MAX_MS, waitMs * 2);
  }
}

/** Store writes are awaited before the ack; a failure is logged there, never left unhandled. */
function track(ctx: EventRunnerContext, lease: LeaseScope, write: Promise<void>, what: string, key: string): void {
  lease.pendingWrites.push(
    write.catch((err: unknown) => {
      ctx.logger.error({ err, key }, `idempotency store: ${what} failed`);
    }),
  );
}

function emitDone(ctx: EventRunnerContext, event: CloudEvent, handler: string, outcome: EventOutcome, durationMs: number, error?: DispatchError): void {
  // Two literals rather than a spread: this runs once per handler run.
  if (error === undefined) ctx.events.emit('event:done', { workerId: ctx.workerId, event, handler, outcome, durationMs });
  else {
    const reported = error.code === undefined ? { message: error.message } : { message: error.message, code: error.code };
    ctx.events.emit('event:done', { workerId: ctx.workerId, event, handler, outcome, durationMs, error: reported });
  }
}

/**
 * Runs one handler for one event and records the outcome in the store (`unstarted`: the dispatcher
 * dropped the run before it started; nothing is recorded):
 * ok -> done mark; failed -> claim released (retried on redelivery); PermanentError, or a failure at
 * attempt >= maxAttempts -> dead-letter record, then done mark (CONTRACT --max-attempts). A shutdown
 * abort is never dead-lettered: the handler did not fail, the process stopped.
 *
 * Reports through callbacks, one of them once (`onError` only when recording the outcome threw, a
 * bug: the event bus never throws). This is the per-event path: with a dispatcher that offers
 * `dispatchThen` a run costs no promise of the worker's own (an async function kept its whole frame
 * alive across the dispatch, ~0.8 KB per run, and each promise layer added a reaction and a turn;
 * docs/benchmarks.md).
 */
export function runEventHandler(
  ctx: EventRunnerContext,
  lease: LeaseScope,
  event: CloudEvent,
  /** The event's index in the batch. */
  unit: number,
  handler: string,
  key: string,
  claimed: ClaimState,
  onOutcome: (outcome: EventOutcome | 'unstarted') => void,
  onError: (err: unknown) => void,
): void {
  if (claimed === 'new') return dispatchRun(ctx, lease, event, unit, handler, key, onOutcome, onError);
  // Done already (skip), or another owner holds the key: wait for it, then run or skip.
  const settled =
    claimed === 'done'
      ? Promise.resolve<ClaimState>('done')
      : waitForClaim(ctx, lease, key).catch((err: unknown): ClaimState => {
          ctx.logger.warn({ err, eventId: event.id, handler }, 'idempotency store failed while waiting for a claim');
          return 'busy';
        });
  settled
    .then((state) => {
      if (state === 'new') return dispatchRun(ctx, lease, event, unit, handler, key, onOutcome, onError);
      if (state === 'done') emitDone(ctx, event, handler, 'duplicate', 0);
      else emitDone(ctx, event, handler, 'failed', 0, { message: `another worker still holds the claim on ${key}`, code: ErrorCodes.STORE });
      onOutcome(state === 'done' ? 'duplicate' : 'failed');
    })
    .catch(onError);
}

function dispatchRun(
  ctx: EventRunnerContext,
  lease: LeaseScope,
  event: CloudEvent,
  unit: number,
  handler: string,
  key: string,
  onOutcome: (outcome: EventOutcome | 'unstarted') => void,
  onError: (err: unknown) => void,
): void {
  const startedMs = performance.now();
  const onResult = (result: DispatchResult): void => {
    let recorded: EventOutcome | 'unstarted' | Promise<EventOutcome>;
    try {
      recorded = recordOutcome(ctx, lease, event, handler, key, result, startedMs);
    } catch (err) {
      return onError(err);
    }
    if (typeof recorded === 'string') onOutcome(recorded);
    else recorded.then(onOutcome, onError);
  };
  const job = { handler, event, ctx: lease.jobContext };
  const dispatcher = ctx.dispatcher;
  if (dispatcher.dispatchThen !== undefined) dispatcher.dispatchThen(job, lease.signal, onResult);
  else dispatcher.dispatch(job, lease.signal, lease.lane, unit).then(onResult, onError);
}

function recordOutcome(
  ctx: EventRunnerContext,
  lease: LeaseScope,
  event: CloudEvent,
  handler: string,
  key: string,
  outcome: DispatchResult,
  startedMs: number,
): EventOutcome | 'unstarted' | Promise<EventOutcome> {
  // Dropped by the dispatcher before the handler ran: the claim is the batch's to release.
  if (outcome.status === 'unstarted') return 'unstarted';
  const durationMs = outcome.durationMs ?? performance.now() - startedMs;

  if (outcome.status === 'ok') {
    lease.doneMarks.add(key);
    ctx.firstFailures.take(key);
    emitDone(ctx, event, handler, 'ok', durationMs);
    return 'ok';
  }

  const error = outcome.error;
  // Only a forced shutdown excuses a failure; a run cut at the batch deadline was too slow and counts.
  const shutdown = lease.signal.aborted && (lease.signal.reason as { code?: unknown } | undefined)?.code === ErrorCodes.ABORTED;
  const deadLetter = !shutdown && (outcome.status === 'permanent' || lease.attempt >= ctx.maxAttempts);
  if (!deadLetter) {
    ctx.firstFailures.note(key);
    track(ctx, lease, ctx.store.release([key], lease.owner), 'release', key);
    ctx.logger.warn({ eventId: event.id, handler, attempt: lease.attempt, err: error }, `handler ${handler} failed: ${error.message}`);
    emitDone(ctx, event, handler, 'failed', durationMs, error);
    return 'failed';
  }
  return deadLetterRun(ctx, lease, event, handler, key, outcome.status === 'permanent' ? 'permanent' : 'max-attempts', error, durationMs);
}

async function deadLetterRun(
  ctx: EventRunnerContext,
  lease: LeaseScope,
  event: CloudEvent,
  handler: string,
  key: string,
  reason: DeadLetterRecord['reason'],
  error: DispatchError,
  durationMs: number,
): Promise<EventOutcome> {
  const log = ctx.logger;
  const firstFailedAt = ctx.firstFailures.take(key);
  const record: DeadLetterRecord = {
    event,
    handler,
    reason,
    error,
    attempt: lease.attempt,
    generation: lease.generation,
    workerId: ctx.workerId,
    leaseId: lease.leaseId,
    ...(firstFailedAt === undefined ? {} : { firstFailedAt }),
    deadLetteredAt: new Date().toISOString(),
  };
  try {
    await ctx.deadLetter.write(record);
  } catch (err) {
    // Not recorded anywhere: keep the event alive (requeue) rather than lose it.
    log.error({ err, eventId: event.id, handler }, 'dead-letter sink failed: the event is retried instead');
    track(ctx, lease, ctx.store.release([key], lease.owner), 'release', key);
    emitDone(ctx, event, handler, 'failed', durationMs, error);
    return 'failed';
  }
  lease.doneMarks.add(key);
  log.error(
    { eventId: event.id, type: event.type, handler, attempt: lease.attempt, reason: record.reason, err: error },
    `event ${event.id} dead-lettered for ${handler} (${record.reason}): ${error.message}`,
  );
  emitDone(ctx, event, handler, 'dead_lettered', durationMs, error);
  return 'dead_lettered';
}
