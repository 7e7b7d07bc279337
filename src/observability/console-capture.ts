/**
 * A handler's `console.log` (and info, warn, error, debug, trace) as a log record of the run that
 * made it: the handler's name, the event id and the rest of its `ctx.log` bindings, in the format
 * of the destination (one JSON object per line on a pipe, a readable line on a terminal). Without
 * it, piped output mixes raw text into the JSON lines and a collector (or `| jq`) cannot read it.
 *
 * The worker installs it once per thread that runs handlers (the main thread for `--isolation
 * none`, each handler thread); a run's call is wrapped in `withConsoleOf(ctx.log)`. Console calls
 * outside a run (a module's top level, a timer a handler left behind) go to the fallback logger.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { format } from 'node:util';
import type { HandlerLogger } from '../handlers/define.js';

const runLogger = new AsyncLocalStorage<() => HandlerLogger>();
let fallback: HandlerLogger | undefined;

const LEVELS = { log: 'info', info: 'info', warn: 'warn', error: 'error', debug: 'debug', trace: 'debug' } as const;

/** Calls `fn` with the console's lines going to `logger()` (made on first use) while it, and what it awaits, runs. */
export function withConsoleOf<T>(logger: () => HandlerLogger, fn: () => T): T {
  return fallback === undefined ? fn() : runLogger.run(logger, fn);
}

/** Replaces this thread's console methods (once); lines outside a run go to `outside`. */
export function captureConsole(outside: HandlerLogger): void {
  if (fallback !== undefined) return;
  fallback = outside;
  for (const [method, level] of Object.entries(LEVELS) as Array<[keyof typeof LEVELS, (typeof LEVELS)[keyof typeof LEVELS]]>) {
    console[method] = (...args: unknown[]) => {
      const logger = runLogger.getStore()?.() ?? fallback!;
      const [first] = args;
      // console.error(err): the error in full under `err`, as the loggers record errors.
      if (args.length === 1 && first instanceof Error) logger[level]({ console: method, err: first }, first.message);
      else logger[level]({ console: method }, format(...args));
    };
  }
}
