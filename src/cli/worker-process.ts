import type { Logger } from 'pino';
import { describeConfig } from '../config/describe.js';
import type { WorkerConfig } from '../config/types.js';
import { ConfigError, ErrorCodes, hasCode } from '../errors.js';
import { captureConsole } from '../observability/console-capture.js';
import type { CliContext } from './context.js';
import { printError } from './context.js';
import { loadStartWorker, type WorkerHandle, type StartWorker } from './seams.js';
import { SIGNAL_EXIT_CODES, onShutdownSignals } from './signals.js';

type DoneResult = Awaited<WorkerHandle['done']>;

/**
 * Runs one worker until it ends and maps the ending to an exit code (docs/operations.md): 0 for a drain after
 * SIGTERM/SIGINT or an idle exit, 2 for configuration found bad at start-up (handlers folder,
 * metrics port), 1 for anything fatal. A second signal exits at once.
 */
export async function runWorkerProcess(
  config: WorkerConfig,
  logger: Logger,
  context: CliContext,
  /** The worker to start (default: src/worker/start.ts); tests pass a fake. */
  startWorker?: StartWorker,
): Promise<number> {
  logger.info({ config: describeConfig(config) }, 'starting durable-worker');
  // In-process handlers' console.* lines: records of their runs (handler threads do the same).
  captureConsole(logger.child({ component: 'handlers' }));
  startWorker ??= await loadStartWorker();

  let worker: WorkerHandle | undefined;
  let closing: Promise<void> | undefined;
  let signalled = false;
  let resolveClosed: (result: DoneResult) => void = () => {};
  const closed = new Promise<DoneResult>((resolve) => (resolveClosed = resolve));
  const close = (): Promise<void> => {
    if (worker === undefined) return Promise.resolve();
    closing ??= worker.close().then(
      () => resolveClosed({ reason: 'closed' }),
      (err: unknown) => resolveClosed({ reason: 'fatal', error: err }),
    );
    return closing;
  };

  const dispose = onShutdownSignals({
    first(signal) {
      signalled = true;
      logger.info(
        { signal, shutdownTimeoutSeconds: config.shutdownTimeoutSeconds },
        'draining: finishing events in flight (send the signal again to exit at once)',
      );
      if (worker !== undefined) {
        void close();
        return;
      }
      // Still starting (a token request retrying, say): nothing is leased yet, so give the start
      // the drain budget and then leave without it.
      setTimeout(() => resolveClosed({ reason: 'closed' }), config.shutdownTimeoutSeconds * 1_000).unref();
    },
    second(signal) {
      logger.warn({ signal }, 'second signal: exiting without waiting for the drain');
      logger.flush();
      process.exit(SIGNAL_EXIT_CODES[signal]);
    },
  });

  try {
    const starting = startWorker(config, { logger });
    // Once abandoned, a late failure of the start must not become an unhandled rejection.
    starting.catch(() => {});
    let started: { worker: WorkerHandle } | { abandoned: DoneResult };
    try {
      started = await Promise.race([starting.then((w) => ({ worker: w })), closed.then((r) => ({ abandoned: r }))]);
    } catch (err) {
      // A missing handlers folder, a broken handler module or a taken port: the user's setup, exit 2.
      if (hasCode(err, ErrorCodes.CONFIG) || hasCode(err, ErrorCodes.HANDLER_LOAD)) {
        throw err instanceof ConfigError ? err : new ConfigError(err instanceof Error ? err.message : String(err), undefined, { cause: err });
      }
      throw err;
    }
    if ('abandoned' in started) {
      logger.warn('stopped before the worker finished starting');
      return 0;
    }
    worker = started.worker;
    if (worker.metricsUrl !== undefined) {
      const endpoint = worker.metricsUrl.endsWith('/metrics') ? worker.metricsUrl : `${worker.metricsUrl.replace(/\/$/, '')}/metrics`;
      logger.info({ url: endpoint }, `metrics at ${endpoint}`);
    }
    if (signalled) void close();

    const result = await Promise.race([worker.done, closed]);
    await close();
    if (result.reason === 'fatal') {
      logger.fatal({ err: result.error }, 'worker stopped on a fatal error');
      printError(context, result.error instanceof Error ? result.error.message : String(result.error));
      return 1;
    }
    logger.info({ reason: result.reason }, result.reason === 'idle' ? 'caught up and idle: exiting' : 'drained: exiting');
    return 0;
  } finally {
    dispose();
    logger.flush();
  }
}
