import { AbortedError, ErrorCodes, HandlerTimeoutError, hasCode } from '../errors.js';
import type { LoadedHandler } from '../handlers/loader.js';
import { normalizeBatchResults } from '../handlers/batch-results.js';
import type { CallOutcome, DispatchError } from './types.js';

/** How a call ended, from what its handler threw or resolved with: plain data, so it may cross a thread. */

export function toDispatchError(err: unknown): DispatchError {
  if (err instanceof Error || (typeof err === 'object' && err !== null && 'message' in err)) {
    const { message, stack, code, retryAfterMs } = err as { message?: unknown; stack?: unknown; code?: unknown; retryAfterMs?: unknown };
    return {
      message: typeof message === 'string' && message !== '' ? message : String(err),
      ...(typeof stack === 'string' ? { stack } : {}),
      ...(typeof code === 'string' ? { code } : {}),
      // A handler's own wait (RetryLaterError, or any error that carries one): the worker honours it.
      ...(typeof retryAfterMs === 'number' && retryAfterMs >= 0 && Number.isFinite(retryAfterMs) ? { retryAfterMs } : {}),
    };
  }
  return { message: `handler threw a non-error value: ${String(err)}` };
}

/** Handlers say what happened; the framework decides what it means. Branch on code: errors cross threads. */
export function outcomeOfError(err: unknown): CallOutcome {
  return { status: hasCode(err, ErrorCodes.PERMANENT) ? 'permanent' : 'failed', error: toDispatchError(err) };
}

export const OK: CallOutcome = Object.freeze({ status: 'ok' });

/**
 * What a `handleBatch` call of `count` events resolved with, as one outcome: `ok` alone when every
 * event is ok, else `ok` with per-event `results` (errors as plain data: they may cross a thread).
 * A result that cannot be aligned with the events fails the whole call, saying why.
 */
export function batchOutcome(value: unknown, count: number, handlerName: string): CallOutcome {
  let results: (Error | undefined)[];
  try {
    results = normalizeBatchResults(value, count, handlerName);
  } catch (err) {
    return outcomeOfError(err);
  }
  if (results.every((result) => result === undefined)) return OK;
  return { status: 'ok', results: results.map((result) => (result === undefined ? OK : outcomeOfError(result))) };
}

/** Why a run was cut short: its own timeout, the lease deadline, or the caller's signal (with its reason). */
export type AbortCause = { kind: 'timeout'; afterMs: number } | { kind: 'deadline' } | { kind: 'signal'; reason: unknown };

/** The failure a cut-short call ends with, and the reason its `ctx.signal` aborts with. */
export function abortedOutcome(handler: LoadedHandler, cause: AbortCause): { outcome: CallOutcome; reason: Error } {
  let message = `handler ${handler.name} was aborted (shutdown)`;
  let code: string = ErrorCodes.ABORTED;
  if (cause.kind === 'timeout') {
    message = `handler ${handler.name} timed out after ${cause.afterMs} ms`;
    code = ErrorCodes.HANDLER_TIMEOUT;
  } else if (cause.kind === 'deadline' || hasCode(cause.reason, ErrorCodes.HANDLER_TIMEOUT)) {
    // The lease's signal aborts with a HANDLER_TIMEOUT reason at the lease deadline.
    message = `handler ${handler.name} did not finish before the lease deadline`;
    code = ErrorCodes.HANDLER_TIMEOUT;
  }
  return {
    outcome: { status: 'failed', error: { message, code } },
    reason: code === ErrorCodes.HANDLER_TIMEOUT ? new HandlerTimeoutError(message) : new AbortedError(message),
  };
}
