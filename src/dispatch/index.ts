import type { Logger } from 'pino';
import { HandlerLoadError, type LoadedHandler } from '../handlers/loader.js';
import type { EffectTransactionsOptions } from '../idempotency/postgres-transactions.js';
import type { Clock } from '../runtime/clock.js';
import { withBatchHandlers } from './batching.js';
import { createInProcessDispatcher } from './in-process.js';
import { handlerThreadResourceLimits } from './thread-heap.js';
import { poolSize } from './pool-threads.js';
import { createThreadDispatcher } from './thread-pool.js';
import type { Dispatcher, DispatchJob, DispatchResult } from './types.js';

export type { Dispatcher, DispatchJob, CallOutcome, DispatchError, DispatchResult, DispatchRun, LeaseDispatch } from './types.js';
export type { JobContext } from '../types.js';
export { poolSize } from './pool-threads.js';

export interface CreateDispatcherOptions {
  isolation: 'thread' | 'none';
  handlers: readonly LoadedHandler[];
  handlersDir: string | undefined;
  forward: { url: string; mode: 'binary' | 'structured' } | undefined;
  logger: Logger;
  logLevel: string;
  /** Events run at once (`--max-in-progress`): sizes the thread pool. */
  maxInProgress: number;
  defaultTimeoutMs?: number | undefined;
  /** Tracing is on (`--otel`): each handler thread starts its own SDK. */
  otel?: boolean | undefined;
  /**
   * Transactional handlers: the store's database, where their calls open transactions. `poolSize`
   * is for the whole process: with threads, each gets its share (a call holds a connection while it
   * runs, and a thread runs about `maxInProgress / threads` calls at once).
   */
  transactions?: EffectTransactionsOptions | undefined;
  /**
   * The worker's clock, for in-process handlers' deadlines and timeouts (default: the system clock).
   * Handlers in threads time out on the system clock in their thread.
   */
  clock?: Clock | undefined;
}

/** A dispatcher and its thread pool's warm-up (resolved at once without threads). */
export interface StartedDispatcher {
  dispatcher: Dispatcher;
  /** Rejects with a HandlerLoadError when a thread cannot load the handlers; the caller closes the dispatcher. */
  warmedUp: Promise<void>;
}

/**
 * Chooses the dispatcher at the edge, once, and starts it without waiting for the thread pool's
 * warm-up: the worker's first pull overlaps the threads' start, and runs started meanwhile wait for
 * the warm-up (docs/benchmarks.md#cold-start). After a failed warm-up they end unstarted.
 */
export function startDispatcher(options: CreateDispatcherOptions): StartedDispatcher {
  if (options.isolation === 'none') {
    const dispatcher = createInProcessDispatcher({
      handlers: options.handlers,
      logger: options.logger,
      defaultTimeoutMs: options.defaultTimeoutMs,
      transactions: options.transactions,
      clock: options.clock,
    });
    return { dispatcher: withBatchHandlers(dispatcher, options.handlers), warmedUp: Promise.resolve() };
  }
  const threads = poolSize(options.maxInProgress);
  // The young generation bounded on a big host (src/dispatch/thread-heap.ts).
  const resourceLimits = handlerThreadResourceLimits();
  options.logger.debug({ threads, resourceLimits }, 'starting worker thread pool');
  const transactions =
    options.transactions === undefined ? undefined : { ...options.transactions, poolSize: Math.ceil(options.transactions.poolSize / threads) + 1 };
  const dispatcher = createThreadDispatcher({ ...options, threads, resourceLimits, transactions });
  const warmedUp = dispatcher.warmUp().catch((err: unknown) => {
    throw new HandlerLoadError(
      options.handlersDir ?? '.',
      `handlers cannot be loaded in a worker thread: ${err instanceof Error ? err.message : String(err)}`,
      { cause: err },
    );
  });
  // Awaited by the caller, perhaps only after a failure of its own.
  warmedUp.catch(() => {});
  return { dispatcher: withBatchHandlers(dispatcher, options.handlers), warmedUp };
}

/** As startDispatcher, resolved once a thread pool proved it can load the handlers (closed if not). */
export async function createDispatcher(options: CreateDispatcherOptions): Promise<Dispatcher> {
  const { dispatcher, warmedUp } = startDispatcher(options);
  try {
    await warmedUp;
  } catch (err) {
    await dispatcher.close().catch(() => {});
    throw err;
  }
  return dispatcher;
}

/** One run on its own, as a promise: for a caller outside a lease (a dead-letter replay). */
export function dispatchOnce(dispatcher: Dispatcher, job: DispatchJob, signal: AbortSignal): Promise<DispatchResult> {
  const runs = dispatcher.open(signal);
  return new Promise<DispatchResult>((resolve) => runs.start({ job, end: resolve })).finally(() => runs.close());
}
