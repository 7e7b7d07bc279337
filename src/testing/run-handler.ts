import { ErrorCodes } from '../errors.js';
import type { HandlerLogger } from '../handlers/define.js';
import { setUpHandlers, tearDownHandlers } from '../handlers/life-cycle.js';
import { toLoadedHandler, type LoadedHandler } from '../handlers/loader.js';
import { matchesPattern } from '../runtime/type-pattern.js';
import { runHandler as dispatchRun, type Clock } from '../dispatch/run-handler.js';
import type { DispatchError, CallOutcome } from '../dispatch/types.js';
import type { CloudEvent } from '../types.js';
import { runInTestTransaction, testDatabaseFor, type TestDatabase } from './test-transaction.js';

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
  /** This handler's attempt on the event (`ctx.attempt`: its failed runs so far + 1). Default 1. */
  attempt?: number;
  /** The lease's delivery attempt (`ctx.deliveryAttempt`). Default 1. */
  deliveryAttempt?: number;
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
  /**
   * `ctx.resources` as given: the handler's `setup` and `teardown` do not run (share one pool over
   * many runs, or hand in a stand-in). Without it, a handler with `setup` gets it run before the
   * event (once, no retry: a failure rejects with SetupError naming the handler) and its `teardown`
   * after, whatever the outcome.
   */
  resources?: unknown;
  /**
   * A transactional handler's database (required for one): its call runs in a transaction there,
   * committed when the run ends ok and rolled back otherwise, so a test can read what it wrote, or
   * that nothing stayed. A PGlite instance (`@electric-sql/pglite`, PostgreSQL without a server), a
   * connected `pg.Client`, or a `pg.Pool`. No done mark is written (no idempotency store is involved).
   */
  database?: TestDatabase;
}

export function captureLogger(logs: CapturedLog[], bindings: Record<string, unknown>): HandlerLogger {
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
  const loaded = loadForTest('runHandler', handler, [event], options);
  if (loaded.handle === undefined) throw new TypeError('runHandler: this is a batch handler (defineBatchHandler): use runBatchHandler');
  const database = testDatabaseFor('runHandler', loaded, options);
  return withLifeCycle(loaded, options, (logs) => runOnce(loaded, event, options, logs, database));
}

/** The handler as the loader would take it, refusing what the worker would never run (TypeError). */
export function loadForTest(caller: string, handler: unknown, events: readonly CloudEvent[], options: { handlerName?: string | undefined }): LoadedHandler {
  const name = options.handlerName ?? 'test-handler';
  let loaded;
  try {
    loaded = toLoadedHandler(name, name, unwrap(handler));
  } catch (err) {
    throw new TypeError(`${caller}: ${err instanceof Error ? err.message : String(err)}`);
  }
  for (const event of events) {
    if (!loaded.types.some((pattern) => matchesPattern(pattern, event.type))) {
      throw new TypeError(`${caller}: handler type ${loaded.types.join(', ')} never receives an event of type ${event.type}`);
    }
  }
  return loaded;
}

/**
 * Runs `run` between the handler's setup and teardown (the worker's own life-cycle code), unless
 * `options.resources` stands in for them. The logs of setup and teardown are captured with the run's.
 */
export async function withLifeCycle<T extends { logs: CapturedLog[] }>(
  loaded: LoadedHandler,
  options: { resources?: unknown },
  run: (logs: CapturedLog[]) => Promise<T>,
): Promise<T> {
  const logs: CapturedLog[] = [];
  if ('resources' in options) loaded.resources = options.resources;
  // Started at once when there is nothing to set up: a fake clock's first `advance` finds the deadline armed.
  if ('resources' in options || (loaded.setup === undefined && loaded.teardown === undefined)) return run(logs);
  const logger = (bindings: Record<string, unknown>) => captureLogger(logs, bindings);
  await setUpHandlers([loaded], { logger, retry: false });
  let result: T;
  try {
    result = await run(logs);
  } finally {
    const [failure] = await tearDownHandlers([loaded], { logger, timeoutMs: TEARDOWN_TIMEOUT_MS });
    if (failure !== undefined)
      throw new Error(`teardown of handler ${failure.handler} failed: ${failure.error instanceof Error ? failure.error.message : String(failure.error)}`, {
        cause: failure.error,
      });
  }
  return result;
}

/** As the worker's default --shutdown-timeout. */
const TEARDOWN_TIMEOUT_MS = 25_000;

function runOnce(
  loaded: LoadedHandler,
  event: CloudEvent,
  options: RunHandlerOptions,
  logs: CapturedLog[],
  database: TestDatabase | undefined,
): Promise<HandlerOutcome> {
  const name = loaded.name;
  const attempt = options.attempt ?? 1;
  const maxAttempts = options.maxAttempts ?? 5;
  const clock = options.clock;
  const nowMs = clock?.now() ?? Date.now();
  const job = {
    handler: name,
    event,
    ctx: {
      attempt,
      deliveryAttempt: options.deliveryAttempt ?? 1,
      generation: options.generation ?? 1,
      workerId: options.workerId ?? 'test-worker-0',
      leaseId: options.leaseId ?? 'test-lease',
      leaseDeadlineMs: nowMs + (options.leaseMs ?? 60_000),
    },
  };
  // Called synchronously (also in a transaction): the deadline timer is armed before this returns, so `clock.advance` fires it.
  const start = (handler: LoadedHandler) =>
    dispatchRun(handler, job, {
      signal: options.signal,
      logger: (bindings) => captureLogger(logs, bindings),
      defaultTimeoutMs: options.defaultTimeoutMs,
      clock,
    });
  const running = database === undefined ? start(loaded) : runInTestTransaction(loaded, database, start);
  return running.then((outcome): HandlerOutcome => ({ ...whatNext(outcome, attempt, maxAttempts), logs }));
}

/** What the worker does with an event after a run ended so (the logs apart). */
export type EventNext =
  { status: 'ok' } | { status: 'failed'; error: DispatchError } | { status: 'dead_lettered'; reason: 'permanent' | 'max-attempts'; error: DispatchError };

export function whatNext(outcome: CallOutcome, attempt: number, maxAttempts: number): EventNext {
  if (outcome.status === 'ok') return { status: 'ok' };
  if (outcome.status === 'permanent') return { status: 'dead_lettered', reason: 'permanent', error: outcome.error };
  // A shutdown abort is never dead-lettered: the batch is acked failed and redelivered. Nor is an
  // event whose call rolled back for another event's failure: that run is not counted.
  const counted = outcome.error.code !== ErrorCodes.ABORTED && outcome.error.code !== ErrorCodes.ROLLED_BACK;
  if (attempt >= maxAttempts && counted) return { status: 'dead_lettered', reason: 'max-attempts', error: outcome.error };
  return { status: 'failed', error: outcome.error };
}
