import type { Logger } from 'pino';
import type { LoadedHandler } from '../handlers/loader.js';
import { runHandler, startHandlerRun, type RunHandlerOptions } from './run-handler.js';
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
  // The runs of a batch come one after another: the last options serve most of them without a lookup.
  let lastOptions: RunHandlerOptions | undefined;
  const optionsFor = (signal: AbortSignal): RunHandlerOptions => {
    if (lastOptions?.signal === signal) return lastOptions;
    let runOptions = optionsBySignal.get(signal);
    if (runOptions === undefined) {
      runOptions = { signal, logger: childLogger, defaultTimeoutMs: options.defaultTimeoutMs };
      optionsBySignal.set(signal, runOptions);
    }
    lastOptions = runOptions;
    return runOptions;
  };
  const unknown = (job: DispatchJob): DispatchOutcome => ({ status: 'failed', error: { message: `unknown handler ${job.handler}` } });
  return {
    dispatch(job: DispatchJob, signal: AbortSignal): Promise<DispatchOutcome> {
      const handler = byName.get(job.handler);
      return handler === undefined ? Promise.resolve(unknown(job)) : runHandler(handler, job, optionsFor(signal));
    },
    dispatchThen(job: DispatchJob, signal: AbortSignal, onEnd: (result: DispatchOutcome) => void): void {
      const handler = byName.get(job.handler);
      if (handler === undefined) onEnd(unknown(job));
      else startHandlerRun(handler, job, optionsFor(signal), onEnd);
    },
    async close() {},
  };
}
