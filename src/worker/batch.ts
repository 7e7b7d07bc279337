import { setMaxListeners } from 'node:events';
import PQueue from 'p-queue';
import type { ConsumerApi } from '../client/consumer-api.js';
import { ErrorCodes } from '../errors.js';
import type { LoadedHandler } from '../handlers/loader.js';
import type { Router } from '../handlers/router.js';
import type { ClaimState } from '../idempotency/store.js';
import type { AckStatus, CloudEvent, LeaseBatch } from '../types.js';
import { acknowledgeBatch } from './ack.js';
import { runEventHandler, type EventRunnerContext, type LeaseScope } from './event-runner.js';
import type { InFlightCounter } from './in-flight.js';
import { RateLimiter, safetyMarginMs } from './timing.js';

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
  const onForce = () => abort.abort(Object.assign(new Error('forced shutdown'), { code: ErrorCodes.ABORTED }));
  if (ctx.forceSignal.aborted) onForce();
  ctx.forceSignal.addEventListener('abort', onForce, { once: true });
  const deadlineTimer = setTimeout(() => abort.abort(Object.assign(new Error('batch deadline'), { code: ErrorCodes.HANDLER_TIMEOUT })), Math.max(0, deadlineMs - Date.now()));

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
    pendingWrites: [],
  };

  let settledEvents = 0;
  try {
    settledEvents = await runEvents(batchCtx, batch.events, lease);
  } finally {
    clearTimeout(deadlineTimer);
    ctx.forceSignal.removeEventListener('abort', onForce);
  }

  const allSettled = settledEvents === batch.events.length;
  const hitDeadline = abort.signal.aborted && !ctx.forceSignal.aborted;
  // Done marks and releases must be stored before the ack: after an `ok` the events are gone.
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
  const routes = events.map((event) => ctx.router.route(event.type).map((h) => h.name));
  const keys: string[] = [];
  events.forEach((event, i) => {
    for (const handler of routes[i] ?? []) keys.push(`${handler}:${event.id}`);
  });

  let states: ClaimState[] = [];
  if (keys.length > 0) {
    try {
      states = await ctx.store.claim(keys, lease.owner, Math.max(1, lease.expiresAtMs - Date.now()));
    } catch (err) {
      ctx.logger.error({ err }, 'idempotency store claim failed: the batch is requeued');
      return 0;
    }
  }
  const claimOf = new Map(keys.map((key, i) => [key, states[i] ?? 'busy'] as const));

  const queue = new PQueue({ concurrency: ctx.concurrency });
  let settled = 0;
  /** Indexes of the events whose handlers were started (their claims are settled by the runs). */
  const started = new Set<number>();
  const stopStarting = () => lease.signal.aborted || ctx.drainSignal.aborted;

  const runEvent = async (event: CloudEvent, handlers: readonly string[]): Promise<boolean> => {
    if (handlers.length === 0) {
      // No handler is interested: nothing to do, and nothing to retry.
      ctx.events.emit('event:done', { workerId: ctx.workerId, event, handler: undefined, outcome: 'ok', durationMs: 0 });
      ctx.logger.debug({ eventId: event.id, type: event.type }, 'no handler for this event type');
      return true;
    }
    ctx.inFlight.add(1);
    try {
      const outcomes = await Promise.all(
        handlers.map((handler) => {
          const key = `${handler}:${event.id}`;
          return runEventHandler(ctx, lease, event, handler, key, claimOf.get(key) ?? 'busy');
        }),
      );
      return outcomes.every((outcome) => outcome !== 'failed');
    } finally {
      ctx.inFlight.add(-1);
    }
  };

  // Events of one subject form a chain in stream order; chains run side by side (CONTRACT
  // --concurrency). After a failure the rest of its chain waits for the redelivery, so a later
  // update never overtakes an earlier one that is being retried.
  const chains = new Map<string, number[]>();
  events.forEach((event, i) => {
    const chain = chains.get(event.subject);
    if (chain === undefined) chains.set(event.subject, [i]);
    else chain.push(i);
  });
  const runChain = async (indexes: number[]) => {
    for (const i of indexes) {
      if (stopStarting()) return;
      const event = events[i] as CloudEvent;
      const ok = await queue.add(() => {
        if (stopStarting()) return Promise.resolve(false);
        started.add(i);
        return runEvent(event, routes[i] ?? []);
      });
      if (!ok) return;
      settled++;
    }
  };
  const all = Promise.all([...chains.values()].map(runChain));
  // Handler runs end by the deadline on their own; this bounds the wait if one cannot report.
  const stragglers = new Promise<void>((resolve) => {
    const onAbort = () => setTimeout(resolve, STRAGGLER_GRACE_MS);
    if (lease.signal.aborted) onAbort();
    else lease.signal.addEventListener('abort', onAbort, { once: true });
    void all.finally(() => {
      lease.signal.removeEventListener('abort', onAbort);
      resolve();
    });
  });
  await Promise.race([all, stragglers]);
  releaseUnstarted(ctx, lease, events, routes, claimOf, started);
  return settled;
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
  events: readonly CloudEvent[],
  routes: ReadonlyArray<readonly string[]>,
  claimOf: ReadonlyMap<string, ClaimState>,
  started: ReadonlySet<number>,
): void {
  const keys: string[] = [];
  events.forEach((event, i) => {
    if (started.has(i)) return;
    for (const handler of routes[i] ?? []) {
      const key = `${handler}:${event.id}`;
      if (claimOf.get(key) === 'new') keys.push(key);
    }
  });
  if (keys.length === 0) return;
  lease.pendingWrites.push(
    ctx.store.release(keys, lease.owner).catch((err: unknown) => {
      ctx.logger.error({ err, keys: keys.length }, 'idempotency store: releasing the claims of unstarted events failed (they free at the lease expiry)');
    }),
  );
}
