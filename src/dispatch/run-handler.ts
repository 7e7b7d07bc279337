import { ErrorCodes, hasCode } from '../errors.js';
import type { HandlerContext, HandlerLogger } from '../handlers/define.js';
import type { LoadedHandler } from '../handlers/loader.js';
import type { DispatchError, DispatchJob, DispatchOutcome } from './types.js';

/** Creates the logger a handler sees; called at most once per run, on first use of `ctx.log`. */
export type HandlerLoggerFactory = (bindings: Record<string, unknown>) => HandlerLogger;

/** Time source of a run; tests substitute a fake one (durable-worker/testing `createFakeClock`). */
export interface Clock {
  now(): number;
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

export interface RunHandlerOptions {
  /** Aborts the run early (shutdown); the lease deadline and the timeout abort it anyway. */
  signal?: AbortSignal | undefined;
  logger: HandlerLoggerFactory;
  /** Timeout of a handler that declares none (`--handler-timeout`); default: the lease deadline. */
  defaultTimeoutMs?: number | undefined;
  /** Default: the system clock. */
  clock?: Clock | undefined;
}

/** When the run must end: the earlier of the lease deadline and the handler's own timeout. */
export function effectiveDeadlineMs(handler: Pick<LoadedHandler, 'timeoutMs'>, job: DispatchJob, startMs: number, defaultTimeoutMs?: number): number {
  const timeoutMs = handler.timeoutMs ?? defaultTimeoutMs;
  return timeoutMs === undefined ? job.ctx.deadlineMs : Math.min(job.ctx.deadlineMs, startMs + timeoutMs);
}

export function toDispatchError(err: unknown): DispatchError {
  if (err instanceof Error || (typeof err === 'object' && err !== null && 'message' in err)) {
    const { message, stack, code } = err as { message?: unknown; stack?: unknown; code?: unknown };
    return {
      message: typeof message === 'string' && message !== '' ? message : String(err),
      ...(typeof stack === 'string' ? { stack } : {}),
      ...(typeof code === 'string' ? { code } : {}),
    };
  }
  return { message: `handler threw a non-error value: ${String(err)}` };
}

/** Handlers say what happened; the framework decides (STYLE 8). Branch on code: errors cross threads. */
export function outcomeOfError(err: unknown): DispatchOutcome {
  return { status: hasCode(err, ErrorCodes.PERMANENT) ? 'permanent' : 'failed', error: toDispatchError(err) };
}

/**
 * Runs one handler for one event with a `ctx.signal` that aborts at the deadline (or on `signal`),
 * and never waits past it: a handler that ignores its signal is left behind and the run counts as
 * failed, so the batch can be acked before the lease expires. Never rejects.
 */
export async function runHandler(handler: LoadedHandler, job: DispatchJob, options: RunHandlerOptions): Promise<DispatchOutcome> {
  const handle = handler.handle;
  if (handle === undefined) return { status: 'failed', error: { message: `handler ${handler.name} has no handle function`, code: ErrorCodes.HANDLER_LOAD } };
  const clock = options.clock ?? systemClock;
  const startMs = clock.now();
  const deadlineMs = effectiveDeadlineMs(handler, job, startMs, options.defaultTimeoutMs);
  const controller = new AbortController();
  let timer: unknown;
  let settleAbort: (outcome: DispatchOutcome) => void = () => {};
  const aborted = new Promise<DispatchOutcome>((resolve) => (settleAbort = resolve));

  const onTimeout = () => {
    const timedOutByHandler = deadlineMs < job.ctx.deadlineMs;
    const message = timedOutByHandler
      ? `handler ${handler.name} timed out after ${deadlineMs - startMs} ms`
      : `handler ${handler.name} did not finish before the lease deadline`;
    const error = { message, code: ErrorCodes.HANDLER_TIMEOUT };
    controller.abort(Object.assign(new Error(message), { code: ErrorCodes.HANDLER_TIMEOUT }));
    settleAbort({ status: 'failed', error });
  };
  const onAbort = () => {
    const message = `handler ${handler.name} was aborted (shutdown)`;
    controller.abort(Object.assign(new Error(message), { code: ErrorCodes.ABORTED }));
    settleAbort({ status: 'failed', error: { message, code: ErrorCodes.ABORTED } });
  };

  const external = options.signal;
  if (external?.aborted) return { status: 'failed', error: { message: `handler ${handler.name} was aborted before it started`, code: ErrorCodes.ABORTED } };
  if (deadlineMs <= startMs) return { status: 'failed', error: { message: `handler ${handler.name} had no time left before the deadline`, code: ErrorCodes.HANDLER_TIMEOUT } };
  timer = clock.setTimeout(onTimeout, deadlineMs - startMs);
  external?.addEventListener('abort', onAbort, { once: true });

  let log: HandlerLogger | undefined;
  const ctx: HandlerContext = {
    signal: controller.signal,
    get log() {
      log ??= options.logger({ handler: handler.name, eventId: job.event.id, workerId: job.ctx.workerId, leaseId: job.ctx.leaseId, generation: job.ctx.generation, attempt: job.ctx.attempt });
      return log;
    },
    attempt: job.ctx.attempt,
    generation: job.ctx.generation,
    workerId: job.ctx.workerId,
    leaseId: job.ctx.leaseId,
    handlerName: handler.name,
    deadlineMs,
  };

  try {
    const run = (async (): Promise<DispatchOutcome> => {
      await handle(job.event as never, ctx);
      return { status: 'ok' };
    })().catch(outcomeOfError);
    const outcome = await Promise.race([run, aborted]);
    // A handler that resolved after its signal aborted is still not trusted: the lease moved on.
    return outcome;
  } finally {
    clock.clearTimeout(timer);
    external?.removeEventListener('abort', onAbort);
  }
}
