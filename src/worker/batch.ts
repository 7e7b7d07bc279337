import { setMaxListeners } from 'node:events';
import type { ConsumerApi } from '../client/consumer-api.js';
import { atDeadline, whenAborted } from '../abort-fanout.js';
import { systemClock } from '../dispatch/run-handler.js';
import { ErrorCodes } from '../errors.js';
import type { LoadedHandler } from '../handlers/loader.js';
import type { Router } from '../handlers/router.js';
import { idempotencyKey } from '../idempotency/key.js';
import type { ClaimState } from '../idempotency/store.js';
import type { AckStatus, CloudEvent, LeaseBatch } from '../types.js';
import type { EventOutcome } from './events.js';
import { acknowledgeBatch } from './ack.js';
import { DoneMarkWriter } from './done-marks.js';
import { runEventHandler, type EventRunnerContext, type LeaseScope } from './event-runner.js';
import type { InFlightCounter } from './in-flight.js';
import { runScheduled, type RunDone, type RunEnd } from './subject-scheduler.js';
import { RateLimiter, ReusableTimeoutSignal, safetyMarginMs } from './timing.js';

/** What a batch needs from the worker, beyond running one event (STYLE 3: a narrow view). */
export interface BatchContext extends EventRunnerContext {
  destination: string;
  api: Pick<ConsumerApi, 'acknowledge'>;
  router: Router<LoadedHandler>;
  inFlight: InFlightCounter;
  visibilitySeconds: number;
  /** `--concurrency`: events in progress at once in this worker. */
  concurrency: number;
  /** Aborted when draining starts: events not yet started stay unstarted (the batch requeues). */
  drainSignal: AbortSignal;
  /** Aborted at forced shutdown: running handlers are aborted and the batch is acked failed. */
  forceSignal: AbortSignal;
  nearDeadlineWarnings: RateLimiter;
  /** The ack's timeout (the lease expiry), one per pull loop: it acks one batch at a time. */
  ackTimeout: ReusableTimeoutSignal;
}

export interface BatchResult {
  sent: AckStatus;
  /** Events of the batch whose every handler ended ok, duplicate or dead-lettered. */
  settledEvents: number;
}

/** A batch used more than this fraction of its lease: warn (rate-limited) and emit lease:near-deadline. */
export const NEAR_DEADLINE_FRACTION = 0.8;

/** How long after the batch deadline we still wait for handler runs to report before acking failed. */
const STRAGGLER_GRACE_MS = 250;

let nextLaneId = 1;

/**
 * Processes one leased batch: claim every `<handler>:<event id>` key in one store call, run the
 * handlers (`--concurrency` events at once, events of one `subject` in stream order), record the
 * outcomes, then acknowledge: `ok` when every event ended ok/duplicate/dead-lettered, else `failed`
 * so the batch is requeued at once. Unfinished work at the deadline is aborted and acked `failed`
 * BEFORE the lease expires (spec: an expired lease is redelivered with a higher generation).
 */
export async function processBatch(ctx: BatchContext, batch: LeaseBatch, pulledAtMs: number): Promise<BatchResult> {
  const visibilityMs = ctx.visibilitySeconds * 1_000;
  const expiresAtMs = pulledAtMs + visibilityMs;
  const deadlineMs = expiresAtMs - safetyMarginMs(visibilityMs);
  const log = ctx.logger.child({ leaseId: batch.leaseId, generation: batch.generation, attempt: batch.attempt });
  const batchCtx = { ...ctx, logger: log };

  const abort = new AbortController();
  // Every handler run in flight listens to the batch signal: up to --concurrency x handlers per event.
  setMaxListeners(0, abort.signal);
  // Through the shared fan-out: the worker's signal keeps one listener, not one per batch.
  const forced = whenAborted(ctx.forceSignal, () => abort.abort(Object.assign(new Error('forced shutdown'), { code: ErrorCodes.ABORTED })));
  // On the timer the batch's runs share for this deadline, and first on it: a run's own deadline
  // callback never fires before the batch has stopped starting events (on a timer of its own, one
  // could fire first, and an event started in that moment failed at once instead of staying unstarted).
  const deadlineWatch = atDeadline(systemClock, deadlineMs, () => abort.abort(Object.assign(new Error('batch deadline'), { code: ErrorCodes.HANDLER_TIMEOUT })));

  const pendingWrites: Promise<unknown>[] = [];
  const lease: LeaseScope = {
    leaseId: batch.leaseId,
    generation: batch.generation,
    attempt: batch.attempt,
    // The generation is part of the owner: a redelivery is a new owner even for the same worker,
    // while a restarted process given back the same lease re-claims its own keys.
    owner: `${ctx.workerId}:${batch.leaseId}:${batch.generation}`,
    deadlineMs,
    expiresAtMs,
    signal: abort.signal,
    pendingWrites,
    doneMarks: new DoneMarkWriter(ctx.store, log, pendingWrites),
    jobContext: { attempt: batch.attempt, generation: batch.generation, workerId: ctx.workerId, leaseId: batch.leaseId, deadlineMs },
    lane: ctx.dispatcher.queuesRuns === true ? { id: nextLaneId++, limit: ctx.concurrency, stop: ctx.drainSignal } : undefined,
  };

  let settledEvents = 0;
  try {
    settledEvents = await runEvents(batchCtx, batch.events, lease);
  } finally {
    deadlineWatch.cancel();
    forced.cancel();
  }

  const allSettled = settledEvents === batch.events.length;
  // The runs may have been cut by their own deadline timer a moment before the batch's fired.
  const hitDeadline = !ctx.forceSignal.aborted && (abort.signal.aborted || (!allSettled && Date.now() >= deadlineMs));
  // Done marks and releases must be stored before the ack: after an `ok` the events are gone.
  lease.doneMarks.flushForAck();
  await waitUntil(Promise.all(lease.pendingWrites), expiresAtMs - Date.now());
  const sent: AckStatus = allSettled ? 'ok' : 'failed';
  await acknowledgeBatch(batchCtx, batch, sent, expiresAtMs);

  // A batch cut at its deadline, or one that used most of its lease, will soon lose leases: say which knob to turn.
  const usedFraction = (Date.now() - pulledAtMs) / visibilityMs;
  if (hitDeadline || usedFraction > NEAR_DEADLINE_FRACTION) {
    ctx.events.emit('lease:near-deadline', { workerId: ctx.workerId, leaseId: batch.leaseId, usedFraction });
    if (ctx.nearDeadlineWarnings.allow(ctx.workerId)) {
      const what = hitDeadline
        ? `batch deadline reached with ${batch.events.length - settledEvents} of ${batch.events.length} events unfinished (requeued)`
        : `batch used ${Math.round(usedFraction * 100)} % of its lease`;
      log.warn(
        { usedFraction: Math.round(usedFraction * 100) / 100, visibilitySeconds: ctx.visibilitySeconds, events: batch.events.length, concurrency: ctx.concurrency },
        `${what}: raise --visibility, or lower --limit, or raise --concurrency`,
      );
    }
  }
  return { sent, settledEvents };
}

async function waitUntil(promise: Promise<unknown>, timeoutMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([promise, new Promise((resolve) => (timer = setTimeout(resolve, Math.max(0, timeoutMs))))]);
  clearTimeout(timer);
}

/** Returns how many events settled (every handler ok, duplicate or dead-lettered). */
async function runEvents(ctx: BatchContext, events: readonly CloudEvent[], lease: LeaseScope): Promise<number> {
  // keys[keyStart[i] .. keyStart[i + 1]) are event i's `<handler>:<event id>` keys, in route order.
  const routes: (readonly LoadedHandler[])[] = new Array(events.length);
  const keyStart = new Int32Array(events.length + 1);
  const keys: string[] = [];
  for (let i = 0; i < events.length; i++) {
    const event = events[i] as CloudEvent;
    const route = ctx.router.route(event.type);
    routes[i] = route;
    keyStart[i] = keys.length;
    for (const handler of route) keys.push(idempotencyKey(handler.name, event.id));
  }
  keyStart[events.length] = keys.length;

  let states: ClaimState[] = [];
  if (keys.length > 0) {
    try {
      states = await ctx.store.claim(keys, lease.owner, Math.max(1, lease.expiresAtMs - Date.now()));
    } catch (err) {
      ctx.logger.error({ err }, 'idempotency store claim failed: the batch is requeued');
      return 0;
    }
  }

  /** Runs the handler of key `k` (of event `i`); outcomes through the callbacks. */
  const startHandlerOf = (event: CloudEvent, i: number, k: number, handler: LoadedHandler, onOutcome: (outcome: EventOutcome | 'unstarted') => void, onError: (err: unknown) => void) =>
    runEventHandler(ctx, lease, event, i, handler.name, keys[k] as string, states[k] ?? 'busy', onOutcome, onError);
  /** The same as a promise, for an event with several handlers. */
  const runHandlerOf = (event: CloudEvent, i: number, k: number, handler: LoadedHandler) =>
    new Promise<EventOutcome | 'unstarted'>((resolve, reject) => startHandlerOf(event, i, k, handler, resolve, reject));

  /** How an event ends from its handlers' outcomes (its keys start at `first`). */
  const endOfEvent = (first: number, outcomes: readonly (EventOutcome | 'unstarted')[]): RunEnd => {
    if (!outcomes.includes('unstarted')) return outcomes.includes('failed') ? 'failed' : 'settled';
    // Claims of the batch are released with the ack (releaseUnstarted), except those taken while
    // waiting, and those of an event whose other handlers did run (it is retried as a whole).
    const allUnstarted = outcomes.every((outcome) => outcome === 'unstarted');
    releaseKeys(ctx, lease, outcomes.flatMap((outcome, j) => (outcome === 'unstarted' && (!allUnstarted || states[first + j] !== 'new') ? [keys[first + j] as string] : [])));
    return allUnstarted ? 'unstarted' : 'failed';
  };

  // Recording an outcome threw (a bug: the event bus never throws, event-bus.ts); the event is
  // retried, the batch goes on.
  const unexpectedly = (event: CloudEvent, err: unknown): RunEnd => {
    ctx.logger.error({ err, eventId: event.id }, 'processing an event failed unexpectedly: it is retried');
    return 'failed';
  };

  // Callbacks on the run's promise, not an async function: this runs once per event (docs/benchmarks.md).
  const runEvent = (i: number, done: RunDone): void => {
    const event = events[i] as CloudEvent;
    const route = routes[i] as readonly LoadedHandler[];
    const first = keyStart[i] as number;
    if (route.length === 0) {
      // No handler is interested: nothing to do, and nothing to retry.
      ctx.logger.debug({ eventId: event.id, type: event.type }, 'no handler for this event type');
      ctx.events.emit('event:done', { workerId: ctx.workerId, event, handler: undefined, outcome: 'ok', durationMs: 0 });
      done(i, 'settled');
      return;
    }
    try {
      if (route.length === 1) {
        // endOfEvent's answer for one outcome, without an array per event.
        startHandlerOf(
          event,
          i,
          first,
          route[0] as LoadedHandler,
          (outcome) => done(i, outcome === 'unstarted' ? endOfEvent(first, [outcome]) : outcome === 'failed' ? 'failed' : 'settled'),
          (err: unknown) => done(i, unexpectedly(event, err)),
        );
        return;
      }
      Promise.all(route.map((handler, j) => runHandlerOf(event, i, first + j, handler))).then(
        (outcomes) => done(i, endOfEvent(first, outcomes)),
        (err: unknown) => done(i, unexpectedly(event, err)),
      );
    } catch (err) {
      done(i, unexpectedly(event, err));
    }
  };

  // A flag the two signals set, read before each start instead of their `aborted` getters.
  let stopped = false;
  const stop = () => void (stopped = true);
  const stopWatches = [whenAborted(lease.signal, stop), whenAborted(ctx.drainSignal, stop)];
  const schedule = runScheduled({
    count: events.length,
    subjectOf: (i) => (events[i] as CloudEvent).subject,
    concurrency: ctx.concurrency,
    // A dispatcher with lanes gets every event that may start and keeps --concurrency itself.
    window: lease.lane === undefined ? ctx.concurrency : events.length,
    run: runEvent,
    stopStarting: () => stopped,
    onInProgress: (delta) => ctx.inFlight.add(delta),
  });
  // Handler runs end by the deadline on their own; this bounds the wait if one cannot report.
  let stragglerTimer: NodeJS.Timeout | undefined;
  const stragglers = new Promise<void>((resolve) => {
    const watch = whenAborted(lease.signal, () => (stragglerTimer = setTimeout(resolve, STRAGGLER_GRACE_MS)));
    void schedule.finished.finally(() => watch.cancel());
  });
  await Promise.race([schedule.finished, stragglers]);
  clearTimeout(stragglerTimer);
  for (const watch of stopWatches) watch.cancel();
  releaseUnstarted(ctx, lease, keys, keyStart, states, schedule.started);
  return schedule.settled;
}

/**
 * Events never started (drain, deadline, or behind a failure in their subject's chain) keep the
 * claims taken for the batch: release them with the `failed` ack, else the redelivery (a new
 * generation: another owner) finds them `busy` and waits until the old lease would have expired.
 * After the last handler run started, so no run can still need them.
 */
function releaseUnstarted(
  ctx: BatchContext,
  lease: LeaseScope,
  keys: readonly string[],
  keyStart: Int32Array,
  states: readonly ClaimState[],
  started: Uint8Array,
): void {
  const unstarted: string[] = [];
  for (let i = 0; i < started.length; i++) {
    if (started[i] === 1) continue;
    for (let k = keyStart[i] as number; k < (keyStart[i + 1] as number); k++) if (states[k] === 'new') unstarted.push(keys[k] as string);
  }
  releaseKeys(ctx, lease, unstarted);
}

function releaseKeys(ctx: BatchContext, lease: LeaseScope, keys: string[]): void {
  if (keys.length === 0) return;
  lease.pendingWrites.push(
    ctx.store.release(keys, lease.owner).catch((err: unknown) => {
      ctx.logger.error({ err, keys: keys.length }, 'idempotency store: releasing the claims of unstarted events failed (they free at the lease expiry)');
    }),
  );
}
