import { ErrorCodes } from '../errors.js';
import type { HandlerLogger } from '../handlers/define.js';
import { toLoadedHandler } from '../handlers/loader.js';
import { matchesPattern } from '../handlers/router.js';
import { runHandler as dispatchRun, type Clock } from '../dispatch/run-handler.js';
import type { DispatchError } from '../dispatch/types.js';
import type { CloudEvent } from '../types.js';

/** One line a handler logged through `ctx.log`. */
export interface CapturedLog {
  level: 'debug' | 'info' | 'warn' | 'error';
  msg: string | undefined;
  /** The object logged with the line, plus the bindings the worker adds (handler, eventId...). */
  fields: Record<string, unknown>;
}

/**
 * What the worker would do with the event after this run:
 * `ok`; `failed` = retried by requeue; `dead_lettered` = PermanentError (EventDataError for a schema
 * mismatch), or still failing on the last attempt (`attempt >= maxAttempts`).
 */
export type HandlerOutcome =
  | { status: 'ok'; logs: CapturedLog[] }
  | { status: 'failed'; error: DispatchError; logs: CapturedLog[] }
  | { status: 'dead_lettered'; reason: 'permanent' | 'max-attempts'; error: DispatchError; logs: CapturedLog[] };

export interface RunHandlerOptions {
  /** Delivery attempt of the batch. Default 1. */
  attempt?: number;
  /** `--max-attempts`: a failure on this attempt is dead-lettered. Default 5. */
  maxAttempts?: number;
  /** Lease generation. Default 1. */
  generation?: number;
  /** Default `test-worker-0`. */
  workerId?: string;
  /** Default `test-lease`. */
  leaseId?: string;
  /** Handler name (`ctx.handlerName`, the idempotency key prefix). Default `test-handler`. */
  handlerName?: string;
  /** Time until the lease deadline, when `ctx.signal` aborts. Default 60_000 (the default --visibility). */
  leaseMs?: number;
  /** `--handler-timeout` for a handler that declares no `timeoutMs`. Default none. */
  defaultTimeoutMs?: number;
  /** A fake clock (createFakeClock) makes the deadline fire on `clock.advance(ms)`. Default: real time. */
  clock?: Clock;
  /** Aborting it is a shutdown: the run ends `failed` with code DW_ERR_ABORTED. */
  signal?: AbortSignal;
}

function captureLogger(logs: CapturedLog[], bindings: Record<string, unknown>): HandlerLogger {
  const at = (level: CapturedLog['level']) => (obj: object | string, msg?: string) => {
    if (typeof obj === 'string') logs.push({ level, msg: obj, fields: { ...bindings } });
    else logs.push({ level, msg, fields: { ...bindings, ...(obj as Record<string, unknown>) } });
  };
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

/** A handler module namespace (`await import('./handlers/x.js')`) or its default export. */
function unwrap(handler: unknown): unknown {
  const value = handler as { default?: unknown } | null;
  return value !== null && typeof value === 'object' && 'default' in value && !('handle' in value) ? value.default : handler;
}

/**
 * Runs one handler for one event exactly as the worker's dispatcher does (same code: deadline,
 * `ctx.signal`, timeout, PermanentError, schema validation) and says what the worker would do next.
 * No platform, store or thread is involved: the idempotency store and acks are the worker's business.
 * Never rejects for a handler failure; throws TypeError for a value that is not a handler or an
 * event its `type` would never receive.
 */
export function runHandler(handler: unknown, event: CloudEvent, options: RunHandlerOptions = {}): Promise<HandlerOutcome> {
  const name = options.handlerName ?? 'test-handler';
  let loaded;
  try {
    loaded = toLoadedHandler(name, name, unwrap(handler));
  } catch (err) {
    throw new TypeError(`runHandler: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (!loaded.types.some((pattern) => matchesPattern(pattern, event.type))) {
    throw new TypeError(`runHandler: handler type ${loaded.types.join(', ')} never receives an event of type ${event.type}`);
  }
  const attempt = options.attempt ?? 1;
  const maxAttempts = options.maxAttempts ?? 5;
  const clock = options.clock;
  const nowMs = clock?.now() ?? Date.now();
  const logs: CapturedLog[] = [];
  const job = {
    handler: name,
    event,
    ctx: {
      attempt,
      generation: options.generation ?? 1,
      workerId: options.workerId ?? 'test-worker-0',
      leaseId: options.leaseId ?? 'test-lease',
      deadlineMs: nowMs + (options.leaseMs ?? 60_000),
    },
  };
  // Called synchronously: the deadline timer is armed before this returns, so `clock.advance` fires it.
  const running = dispatchRun(loaded, job, {
    signal: options.signal,
    logger: (bindings) => captureLogger(logs, bindings),
    defaultTimeoutMs: options.defaultTimeoutMs,
    clock,
  });
  return running.then((outcome): HandlerOutcome => {
    if (outcome.status === 'ok') return { status: 'ok', logs };
    if (outcome.status === 'permanent') return { status: 'dead_lettered', reason: 'permanent', error: outcome.error, logs };
    // A shutdown abort is never dead-lettered: the batch is acked failed and redelivered.
    if (attempt >= maxAttempts && outcome.error.code !== ErrorCodes.ABORTED) return { status: 'dead_lettered', reason: 'max-attempts', error: outcome.error, logs };
    return { status: 'failed', error: outcome.error, logs };
  });
}
