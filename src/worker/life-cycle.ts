import type { Logger } from 'pino';
import type { Dispatcher } from '../dispatch/types.js';
import type { LoadedHandler } from '../handlers/loader.js';
import type { Readiness } from './readiness.js';

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * Starts the flow once every handler's setup succeeded (docs/handlers.md, "Resources with a life
 * cycle"): at once when no handler has one; otherwise /readyz stays 503, naming the handler whose
 * setup failed, while the dispatcher retries it with backoff. `cancel` (a close before then) stops
 * waiting: nothing was pulled.
 */
export function startAfterSetup(options: {
  handlers: readonly LoadedHandler[];
  dispatcher: Dispatcher;
  readiness: Readiness;
  logger: Logger;
  start: () => void;
}): { cancel(): void } {
  const { readiness, logger } = options;
  if (!options.handlers.some((h) => h.setup !== undefined)) {
    options.start();
    return { cancel() {} };
  }
  const abort = new AbortController();
  readiness.setupPending();
  options.dispatcher
    .setUp({
      signal: abort.signal,
      onFailure(failure) {
        const message = messageOf(failure.error);
        readiness.setupFailed(failure.handler, message);
        const retry = failure.retryInMs === undefined ? '' : `; retrying in ${failure.retryInMs} ms`;
        logger.error(
          { handler: failure.handler, attempt: failure.attempt, err: failure.error },
          `setup of handler ${failure.handler} failed: ${message}${retry}`,
        );
      },
    })
    .then(
      () => {
        if (abort.signal.aborted) return;
        readiness.setUp();
        logger.info('every handler is set up');
        options.start();
      },
      () => {},
    );
  return { cancel: () => abort.abort(new Error('the worker is closing')) };
}

/** At drain, after the last event: every handler's teardown where it was set up, bounded; failures logged. */
export async function tearDownHandlers(handlers: readonly LoadedHandler[], dispatcher: Dispatcher, timeoutMs: number, logger: Logger): Promise<void> {
  if (!handlers.some((h) => h.teardown !== undefined)) return;
  try {
    for (const failure of await dispatcher.tearDown(timeoutMs)) {
      logger.warn({ handler: failure.handler, err: failure.error }, `teardown of handler ${failure.handler} failed: ${messageOf(failure.error)}`);
    }
  } catch (err) {
    logger.warn({ err }, 'shutdown: tearing down the handlers failed');
  }
}

/** What the worker opened, closed in reverse order at its end (a failure is logged, the rest still close). */
export type Cleanup = { name: string; run: () => unknown };

export async function runCleanups(cleanups: Cleanup[], logger: Logger): Promise<void> {
  for (const cleanup of cleanups.splice(0).reverse()) {
    try {
      await cleanup.run();
    } catch (err) {
      logger.warn({ err }, `shutdown: closing ${cleanup.name} failed`);
    }
  }
}
