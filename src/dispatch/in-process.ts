import type { Logger } from 'pino';
import type { LoadedHandler } from '../handlers/loader.js';
import { runHandler, type RunHandlerOptions } from './run-handler.js';
import type { Dispatcher, DispatchJob, DispatchOutcome } from './types.js';

export interface InProcessDispatcherOptions {
  handlers: readonly LoadedHandler[];
  logger: Logger;
  /** Timeout of handlers that declare none; default: the lease deadline. */
  defaultTimeoutMs?: number | undefined;
}

/**
 * `--isolation none`: handlers run on the main thread. Cheapest per event; a handler that blocks
 * the event loop or calls process.exit() takes the worker with it (use `thread` for untrusted code).
 */
export function createInProcessDispatcher(options: InProcessDispatcherOptions): Dispatcher {
  const byName = new Map(options.handlers.map((h) => [h.name, h]));
  const logger = options.logger;
  const childLogger = (bindings: Record<string, unknown>) => logger.child(bindings);
  // One options object per batch signal, not one per run.
  const optionsBySignal = new WeakMap<AbortSignal, RunHandlerOptions>();
  return {
    dispatch(job: DispatchJob, signal: AbortSignal): Promise<DispatchOutcome> {
      const handler = byName.get(job.handler);
      if (handler === undefined) return Promise.resolve({ status: 'failed', error: { message: `unknown handler ${job.handler}` } });
      let runOptions = optionsBySignal.get(signal);
      if (runOptions === undefined) {
        runOptions = { signal, logger: childLogger, defaultTimeoutMs: options.defaultTimeoutMs };
        optionsBySignal.set(signal, runOptions);
      }
      return runHandler(handler, job, runOptions);
    },
    async close() {},
  };
}
