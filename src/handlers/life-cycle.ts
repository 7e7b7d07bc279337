import { setTimeout as sleep } from 'node:timers/promises';
import type { HandlerLogger } from './define.js';
import type { LoadedHandler } from './loader.js';

/** A setup that threw: reported before its retry (the worker logs it with the handler's name). */
export interface SetupFailure {
  handler: string;
  error: unknown;
  /** 1 for the first try. */
  attempt: number;
  /** When it is tried again; undefined when it is not (retry off). */
  retryInMs: number | undefined;
}

export interface SetUpOptions {
  /** The logger `ctx.log` of a handler's setup and teardown uses. */
  logger: (bindings: Record<string, unknown>) => HandlerLogger;
  /** Stops the retries (the worker stops before setup succeeded): the promise rejects with its reason. */
  signal?: AbortSignal | undefined;
  onFailure?: ((failure: SetupFailure) => void) | undefined;
  /** Retry with backoff (the worker), or give up at the first failure (`check --setup`, the test kit). Default true. */
  retry?: boolean;
  /** Backoff of the retries: first wait, doubling up to max. Default 1 s to 30 s. */
  backoff?: { firstMs: number; maxMs: number } | undefined;
}

/** The first setup failure, when retries are off. */
export class SetupError extends Error {
  readonly handler: string;

  constructor(handler: string, cause: unknown) {
    super(`setup of handler ${handler} failed: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = 'SetupError';
    this.handler = handler;
  }
}

/** Handlers whose setup succeeded (in this realm): only they are torn down. */
const setUp = new WeakSet<LoadedHandler>();

const DEFAULT_BACKOFF = { firstMs: 1_000, maxMs: 30_000 };
const NEVER = new AbortController().signal;

/**
 * Runs every handler's `setup` (in load order, one after the other, so a handler may count on an
 * earlier one's side effects as little as on anything else, but logs read in order) and keeps what
 * it returned as the handler's `resources` (`ctx.resources`). A failure is reported and, with
 * `retry`, tried again after a backoff; so a worker whose database is not up yet becomes ready when
 * it is, instead of crash-looping. Handlers set up already (`resources` kept) are not set up again.
 */
export async function setUpHandlers(handlers: readonly LoadedHandler[], options: SetUpOptions): Promise<void> {
  const signal = options.signal ?? NEVER;
  const backoff = options.backoff ?? DEFAULT_BACKOFF;
  for (const handler of handlers) {
    const setup = handler.setup;
    if (setup === undefined || setUp.has(handler)) continue;
    let waitMs = backoff.firstMs;
    for (let attempt = 1; ; attempt++) {
      signal.throwIfAborted();
      try {
        handler.resources = await setup.call(undefined, { handlerName: handler.name, log: options.logger({ handler: handler.name, phase: 'setup' }), signal });
        setUp.add(handler);
        break;
      } catch (err) {
        if (signal.aborted) throw signal.reason;
        const retry = options.retry ?? true;
        options.onFailure?.({ handler: handler.name, error: err, attempt, retryInMs: retry ? waitMs : undefined });
        if (!retry) throw new SetupError(handler.name, err);
        // timers/promises rejects with an AbortError of its own: say why the worker stopped instead.
        await sleep(waitMs, undefined, { signal }).catch(() => {
          throw signal.reason;
        });
        waitMs = Math.min(backoff.maxMs, waitMs * 2);
      }
    }
  }
}

/** A teardown that threw or did not finish in time. */
export interface TeardownFailure {
  handler: string;
  error: unknown;
}

/**
 * Runs `teardown` of every handler set up (or without a setup: its teardown has nothing to wait
 * for), in reverse load order, once: a handler torn down is forgotten. Bounded by `timeoutMs` as a
 * whole: `ctx.signal` aborts then, and the ones still running are reported and left behind. Never
 * rejects.
 */
export async function tearDownHandlers(
  handlers: readonly LoadedHandler[],
  options: { logger: SetUpOptions['logger']; timeoutMs: number },
): Promise<TeardownFailure[]> {
  const failures: TeardownFailure[] = [];
  const due = [...handlers].reverse().filter((h) => h.teardown !== undefined && (h.setup === undefined || setUp.has(h)));
  if (due.length === 0) return failures;
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Error(`teardown did not finish within ${options.timeoutMs} ms`)), Math.max(0, options.timeoutMs));
  try {
    for (const handler of due) {
      const teardown = handler.teardown as NonNullable<LoadedHandler['teardown']>;
      setUp.delete(handler);
      const resources = handler.resources;
      handler.resources = undefined;
      if (controller.signal.aborted) {
        failures.push({ handler: handler.name, error: controller.signal.reason });
        continue;
      }
      try {
        const ended = Promise.resolve(
          teardown.call(undefined, {
            handlerName: handler.name,
            log: options.logger({ handler: handler.name, phase: 'teardown' }),
            signal: controller.signal,
            resources,
          }),
        );
        await Promise.race([ended, abortedPromise(controller.signal)]);
      } catch (err) {
        failures.push({ handler: handler.name, error: err });
      }
    }
  } finally {
    clearTimeout(timer);
  }
  return failures;
}

/** Rejects with the signal's reason once it aborts. */
function abortedPromise(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    else signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
}
