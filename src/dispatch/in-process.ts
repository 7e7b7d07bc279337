import type { Logger } from 'pino';
import { setUpHandlers, tearDownHandlers } from '../handlers/life-cycle.js';
import type { LoadedHandler } from '../handlers/loader.js';
import type { EffectTransactionsOptions } from '../idempotency/postgres-transactions.js';
import { transactionsOnFirstUse } from './call-transaction.js';
import { startHandlerCall, type Clock, type RunHandlerOptions } from './run-handler.js';
import type { Dispatcher, DispatchRun, LeaseDispatch } from './types.js';

export interface InProcessDispatcherOptions {
  handlers: readonly LoadedHandler[];
  logger: Logger;
  /** Timeout of handlers that declare none; default: the lease deadline. */
  defaultTimeoutMs?: number | undefined;
  /** Transactional handlers: the pool to the store's database (call-transaction.ts). */
  transactions?: EffectTransactionsOptions | undefined;
  /** What handlers' deadlines and timeouts run on (the worker's clock); default: the system clock. */
  clock?: Clock | undefined;
}

/**
 * `--isolation none`: handlers run on the main thread. Cheapest per event; a handler that blocks
 * the event loop or calls process.exit() takes the worker with it (use `thread` for untrusted code).
 */
export function createInProcessDispatcher(options: InProcessDispatcherOptions): Dispatcher {
  const byName = new Map(options.handlers.map((h) => [h.name, h]));
  const logger = options.logger;
  const childLogger = (bindings: Record<string, unknown>) => logger.child(bindings);
  const transactions = options.transactions === undefined ? undefined : transactionsOnFirstUse(options.transactions);
  return {
    open(signal: AbortSignal): LeaseDispatch {
      // One options object per lease, shared by its runs.
      const runOptions: RunHandlerOptions = {
        signal,
        logger: childLogger,
        defaultTimeoutMs: options.defaultTimeoutMs,
        transactions: transactions?.open,
        clock: options.clock,
      };
      return {
        start(run: DispatchRun): void {
          // As the thread pool does (thread-runs.ts): a lease aborted before the run started never
          // calls the handler, so the run did not happen and counts as no attempt.
          if (signal.aborted) return run.end({ status: 'unstarted' });
          const handler = byName.get(run.job.handler);
          if (handler === undefined) run.end({ status: 'failed', error: { message: `unknown handler ${run.job.handler}` } });
          else startHandlerCall(handler, run.job, runOptions, run);
        },
        close() {},
      };
    },
    // Once for the process: the handlers are the main thread's own (ctx.resources is read from them).
    setUp: ({ signal, onFailure }) => setUpHandlers(options.handlers, { logger: childLogger, signal, onFailure }),
    tearDown: (timeoutMs) => tearDownHandlers(options.handlers, { logger: childLogger, timeoutMs }),
    async close() {
      await transactions?.close();
    },
  };
}
