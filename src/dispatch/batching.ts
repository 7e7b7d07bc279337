import type { LoadedHandler } from '../handlers/loader.js';
import { compareSequences } from '../runtime/sequence.js';
import type { CloudEvent } from '../types.js';
import type { Dispatcher, DispatchJob, DispatchResult, DispatchRun, LeaseDispatch } from './types.js';

/**
 * Batch handlers on top of any dispatcher (docs/architecture.md, "Batch handlers in the run path"):
 * the runs of a batch handler that start in the same turn of the main thread (the scheduler starts
 * every event it may in one synchronous pass) are gathered per lease and handler, put in stream
 * order, split into calls of at most `maxBatchSize`, and each call goes to the dispatcher as ONE run
 * (one thread runs it). The call's outcome is handed back to each event's own run, so claims, done
 * marks, dead letters and metrics stay per event. Without batch handlers the dispatcher is returned
 * as it is: the single-event path pays nothing.
 */
export function withBatchHandlers<D extends Dispatcher>(dispatcher: D, handlers: readonly LoadedHandler[]): D {
  const bounds = new Map<string, number>();
  for (const handler of handlers) if (handler.batch !== undefined) bounds.set(handler.name, handler.batch.maxBatchSize ?? Number.POSITIVE_INFINITY);
  if (bounds.size === 0) return dispatcher;
  return { ...dispatcher, open: (signal: AbortSignal): LeaseDispatch => new BatchingLease(dispatcher.open(signal), bounds) };
}

/** Stream order. */
function bySequence(a: DispatchRun, b: DispatchRun): number {
  return compareSequences(a.job.event.sequence, b.job.event.sequence);
}

/** The runs of one lease, with the batch handlers' runs of this turn held back until its end. */
class BatchingLease implements LeaseDispatch {
  readonly #inner: LeaseDispatch;
  readonly #bounds: ReadonlyMap<string, number>;
  readonly #pending = new Map<string, DispatchRun[]>();
  #flushing = false;
  /** The worker chains only single-event handlers' runs (LeaseEvent.chainOn): they pass through. */
  readonly startAfter?: LeaseDispatch['startAfter'];
  readonly withdraw?: LeaseDispatch['withdraw'];

  constructor(inner: LeaseDispatch, bounds: ReadonlyMap<string, number>) {
    this.#inner = inner;
    this.#bounds = bounds;
    if (inner.startAfter !== undefined) this.startAfter = inner.startAfter.bind(inner);
    if (inner.withdraw !== undefined) this.withdraw = inner.withdraw.bind(inner);
  }

  start(run: DispatchRun): void {
    if (!this.#bounds.has(run.job.handler)) return this.#inner.start(run);
    const runs = this.#pending.get(run.job.handler);
    if (runs === undefined) this.#pending.set(run.job.handler, [run]);
    else runs.push(run);
    if (this.#flushing) return;
    this.#flushing = true;
    queueMicrotask(() => this.#flush());
  }

  close(): void {
    // Nothing is pending when a lease closes (its events end only after their runs); should a
    // run be, it never started.
    for (const runs of this.#pending.values()) for (const run of runs) run.end({ status: 'unstarted' });
    this.#pending.clear();
    this.#inner.close();
  }

  #flush(): void {
    this.#flushing = false;
    for (const [handler, runs] of this.#pending) {
      const bound = this.#bounds.get(handler) as number;
      runs.sort(bySequence);
      for (let first = 0; first < runs.length; first += bound) this.#inner.start(new BatchRun(handler, runs.slice(first, first + bound)));
    }
    this.#pending.clear();
  }
}

/** One `handleBatch` call: a run for the dispatcher whose end is handed to each event's run. */
class BatchRun implements DispatchRun {
  readonly job: DispatchJob;
  readonly #runs: DispatchRun[];

  constructor(handler: string, runs: DispatchRun[]) {
    const first = (runs[0] as DispatchRun).job;
    const events: CloudEvent[] = runs.map((run) => run.job.event);
    // Tracing on: the call runs in its first event's process span (docs/tracing.md), so the handler's
    // own spans (its upsert, its fetch) join that event's trace; every event keeps its own process span.
    // ctx.attempt of a call: the highest of its events' (each event keeps its own count).
    let ctx = first.ctx;
    for (const run of runs) if (run.job.ctx.attempt > ctx.attempt) ctx = { ...ctx, attempt: run.job.ctx.attempt };
    this.job = { handler, event: first.event, events, ctx, trace: first.trace };
    // A transactional handler's call locks and commits the keys of all its events.
    if (first.keys !== undefined) this.job.keys = runs.map((run) => (run.job.keys as string[])[0] as string);
    this.#runs = runs;
  }

  end(result: DispatchResult): void {
    const runs = this.#runs;
    if (result.status !== 'ok' || result.results === undefined) {
      for (const run of runs) run.end(result);
      return;
    }
    const results = result.results;
    for (let i = 0; i < runs.length; i++) {
      const own = results[i] ?? { status: 'failed', error: { message: `handler ${this.job.handler}: no result for event ${runs[i]!.job.event.id}` } };
      (runs[i] as DispatchRun).end(result.durationMs === undefined ? own : { ...own, durationMs: result.durationMs });
    }
  }
}
