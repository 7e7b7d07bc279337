import { isAbsolute, resolve } from 'node:path';
import type { Logger } from 'pino';
import { resolveStoreUrl } from '../config/schema.js';
import type { DeadLetterStore } from '../dead-letter/store.js';
import { createDispatcher } from '../dispatch/index.js';
import { loadHandlerSet } from '../handlers/handler-set.js';
import { SetupError } from '../handlers/life-cycle.js';
import { createIdempotencyStore, DEFAULT_DONE_TTL_MS } from '../idempotency/index.js';
import type { IdempotencyStore } from '../idempotency/store.js';
import { requireTransactionalStore } from '../idempotency/transactional-store.js';
import type { ReplayResources } from './replay.js';

/** How a replay runs handlers: the `run` options that matter to it (defaults as `run`'s). */
export interface ReplayRunOptions {
  /** Folder of handler modules, as `--handlers` (default `./handlers`). */
  handlersDir?: string;
  /** `--isolation`: `thread` (piscina worker threads, default) or `none` (in-process). */
  isolation?: 'thread' | 'none';
  /** `--idempotency`: the store the workers use (default `sqlite:.durable-worker/idempotency.sqlite`). */
  idempotencyUrl?: string;
  /** `--idempotency-ttl` in ms: how long the replay's done marks are kept (default 7 days). */
  idempotencyTtlMs?: number;
  /** `--visibility` in seconds: each record gets this long to run, as a batch its lease (default 60). */
  visibilitySeconds?: number;
  /** `--handler-timeout` in ms, for handlers that declare no `timeoutMs` (default: the deadline). */
  handlerTimeoutMs?: number;
  /** `--concurrency`: records of different subjects replayed at once (default 8). */
  concurrency?: number;
  /** `--forward-url` (and `--forward-mode`): the built-in forwarding handler, for its records (`@forward`). */
  forwardUrl?: string;
  forwardMode?: 'binary' | 'structured';
  /** Where handler logs and replay warnings go (default: silent). */
  logger?: Logger;
  /** Level of the handler threads' loggers (default: the logger's). */
  logLevel?: string;
  /** Stops the replay between records; a handler running gets its `ctx.signal` aborted. */
  signal?: AbortSignal;
}

export const DEFAULT_REPLAY_IDEMPOTENCY = 'sqlite:.durable-worker/idempotency.sqlite';
/** As the worker's default --shutdown-timeout. */
const TEARDOWN_TIMEOUT_MS = 25_000;

/**
 * Opens what a replay needs, as `run` does: the handler set through the same loader, the same
 * dispatcher (threads or in-process: same isolation, schema checks and timeouts), and the
 * idempotency store per prefix. `close` releases all of it.
 */
export async function openReplayResources(
  store: DeadLetterStore,
  options: ReplayRunOptions,
  cwd: string,
): Promise<{ resources: ReplayResources; close: () => Promise<void> }> {
  const logger = options.logger ?? (await import('pino')).default({ level: 'silent' });
  const handlersDir = options.handlersDir ?? './handlers';
  const absoluteHandlers = isAbsolute(handlersDir) ? handlersDir : resolve(cwd, handlersDir);
  const forward = options.forwardUrl === undefined ? undefined : { url: options.forwardUrl, mode: options.forwardMode ?? 'binary' };
  const concurrency = options.concurrency ?? 8;
  const handlers = await loadHandlerSet({ handlersDir: absoluteHandlers, forward });
  const idempotencyUrl = resolveStoreUrl(cwd, options.idempotencyUrl ?? DEFAULT_REPLAY_IDEMPOTENCY);
  const doneTtlMs = options.idempotencyTtlMs ?? DEFAULT_DONE_TTL_MS;
  requireTransactionalStore(handlers, idempotencyUrl, cwd);
  const transactional = new Set(handlers.filter((h) => h.transactional === true).map((h) => h.name));
  const dispatcher = await createDispatcher({
    isolation: options.isolation ?? 'thread',
    handlers,
    handlersDir: absoluteHandlers,
    forward,
    logger,
    logLevel: options.logLevel ?? logger.level,
    maxInProgress: concurrency,
    defaultTimeoutMs: options.handlerTimeoutMs,
    // Each replay names its record's prefix (DispatchJob.keyPrefix).
    transactions: transactional.size === 0 ? undefined : { url: idempotencyUrl, prefix: '', doneTtlMs, poolSize: concurrency },
  });
  // Handlers with a setup get it before the first replay; a replay does not wait on a failing one.
  if (handlers.some((h) => h.setup !== undefined)) {
    const abort = new AbortController();
    try {
      await dispatcher.setUp({ signal: abort.signal, onFailure: (failure) => abort.abort(new SetupError(failure.handler, failure.error)) });
    } catch (err) {
      await dispatcher.close().catch(() => {});
      throw err;
    }
  }
  const stores = new Map<string, Promise<IdempotencyStore>>();
  const resources: ReplayResources = {
    store,
    dispatcher,
    handlerNames: new Set(handlers.map((h) => h.name)),
    transactionalHandlers: transactional,
    idempotency(prefix) {
      let opened = stores.get(prefix);
      if (opened === undefined) {
        opened = createIdempotencyStore(idempotencyUrl, { prefix, doneTtlMs, poolSize: 2 });
        stores.set(prefix, opened);
      }
      return opened;
    },
    logger,
    visibilityMs: (options.visibilitySeconds ?? 60) * 1_000,
    concurrency,
    signal: options.signal,
  };
  const close = async () => {
    await dispatcher.tearDown(TEARDOWN_TIMEOUT_MS).catch(() => {});
    await dispatcher.close().catch(() => {});
    for (const opened of stores.values()) await opened.then((s) => s.close()).catch(() => {});
  };
  return { resources, close };
}
