import { runHandler as dispatchRun } from '../dispatch/run-handler.js';
import type { CallOutcome } from '../dispatch/types.js';
import type { CloudEvent } from '../types.js';
import { captureLogger, loadForTest, whatNext, withLifeCycle, type CapturedLog, type EventNext, type RunHandlerOptions } from './run-handler.js';
import { runInTestTransaction, testDatabaseFor } from './test-transaction.js';

/** What the worker would do with each event after a batch handler's run, and what it logged. */
export interface BatchHandlerOutcome {
  /** One per event, aligned with the `events` given: `ok`, `failed` or `dead_lettered` (with `reason`). */
  events: EventNext[];
  /** How many `handleBatch` calls ran: the events split by `maxBatchSize`, as the worker splits them. */
  calls: number;
  logs: CapturedLog[];
}

/**
 * Runs a batch handler (defineBatchHandler) on `events` exactly as the worker's dispatcher does (same
 * code: per-event results, schema per event, deadline, `ctx.signal`, timeout, PermanentError), in
 * calls of at most `maxBatchSize`, one after the other, in the order given (the worker gives stream
 * order), between the handler's setup and teardown (or with `options.resources`). Never rejects for
 * a handler failure; throws TypeError for a value that is not a batch handler or an event its `type`
 * would never receive.
 */
export function runBatchHandler(handler: unknown, events: readonly CloudEvent[], options: RunHandlerOptions = {}): Promise<BatchHandlerOutcome> {
  if (events.length === 0) throw new TypeError('runBatchHandler: give at least one event (the worker never calls handleBatch with none)');
  const loaded = loadForTest('runBatchHandler', handler, events, options);
  const batch = loaded.batch;
  if (batch === undefined) throw new TypeError('runBatchHandler: this handler takes one event at a time (defineHandler): use runHandler');
  const database = testDatabaseFor('runBatchHandler', loaded, options);
  const attempt = options.attempt ?? 1;
  const maxAttempts = options.maxAttempts ?? 5;
  const bound = batch.maxBatchSize ?? events.length;
  return withLifeCycle(loaded, options, async (logs) => {
    const clock = options.clock;
    const ctx = {
      attempt,
      deliveryAttempt: options.deliveryAttempt ?? 1,
      generation: options.generation ?? 1,
      workerId: options.workerId ?? 'test-worker-0',
      leaseId: options.leaseId ?? 'test-lease',
      // One lease: every call shares its deadline.
      leaseDeadlineMs: (clock?.now() ?? Date.now()) + (options.leaseMs ?? 60_000),
    };
    const runOptions = {
      signal: options.signal,
      logger: (bindings: Record<string, unknown>) => captureLogger(logs, bindings),
      defaultTimeoutMs: options.defaultTimeoutMs,
      clock,
    };
    const outcomes: EventNext[] = [];
    let calls = 0;
    for (let first = 0; first < events.length; first += bound) {
      const slice = events.slice(first, first + bound);
      calls++;
      const start = (handler: typeof loaded) => dispatchRun(handler, { handler: loaded.name, event: slice[0] as CloudEvent, events: slice, ctx }, runOptions);
      // A transactional handler: one transaction per call, as the worker runs it.
      const outcome = await (database === undefined ? start(loaded) : runInTestTransaction(loaded, database, start));
      for (let i = 0; i < slice.length; i++) outcomes.push(whatNext(eventOutcome(outcome, i), attempt, maxAttempts));
    }
    return { events: outcomes, calls, logs };
  });
}

/** Event `i`'s share of a call's outcome. */
function eventOutcome(outcome: CallOutcome, i: number): CallOutcome {
  if (outcome.status !== 'ok' || outcome.results === undefined) return outcome;
  return outcome.results[i] ?? { status: 'failed', error: { message: `no result for event ${i}` } };
}
