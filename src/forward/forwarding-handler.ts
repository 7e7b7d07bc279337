/**
 * The built-in forwarding handler (`--forward-url`, handler name `@forward`): delivers each event to
 * an app next to the worker (a sidecar's app container) as a CloudEvents HTTP request, and maps the
 * app's answer onto the framework's outcomes:
 *   2xx -> ok; 4xx except 408/429 -> PermanentError (dead-letter at once);
 *   408, 429, 3xx, 5xx, network failure, lease deadline -> ordinary error (retried by requeue).
 * The request carries no credential of the worker: only the event travels.
 */
import { Agent, request, type Dispatcher } from 'undici';
import { defineHandler, type Handler, type HandlerContext } from '../handlers/define.js';
import { AbortedError, ConfigError, DurableWorkerError, ErrorCodes, HandlerTimeoutError, PermanentError, RetryLaterError } from '../errors.js';
import { handlerScope } from '../tracing/handler-scope.js';
import type { CloudEvent } from '../types.js';
import { toForwardRequest, type ForwardMode } from './cloudevents-http.js';
import { forwardLimits } from './forward-limits.js';

/** The handler name the worker runtime registers the forwarding handler under. */
export const FORWARD_HANDLER_NAME = '@forward';

/** Code of a retryable forwarding failure (the app answered 408/429/3xx/5xx). */
export const FORWARD_ERROR_CODE = ErrorCodes.FORWARD;

export interface ForwardingHandlerOptions {
  /** Target URL, http or https, without credentials (e.g. `http://127.0.0.1:8080/events`). */
  url: string;
  /** CloudEvents content mode. Default `'binary'` (`ce-*` headers, data as the JSON body). */
  mode?: ForwardMode;
  /** undici dispatcher. Default: one shared keep-alive Agent per thread. */
  dispatcher?: Dispatcher;
  /** `--forward-rate`: `MAX/PER`, `adaptive` or `adaptive:MAX/PER` (forward-limits.ts). Default: no rate. */
  rate?: string | undefined;
  /** `--forward-concurrency`: requests in flight at once. Default: no bound of its own. */
  concurrency?: number | undefined;
}

/** A retryable answer from the app; `status` is the HTTP status it sent. */
export class ForwardError extends DurableWorkerError {
  readonly status: number;

  constructor(message: string, status: number) {
    super(FORWARD_ERROR_CODE, message);
    this.name = 'ForwardError';
    this.status = status;
  }
}

export type ForwardVerdict = 'ok' | 'retry' | 'dead-letter';

/**
 * 408 (request timeout) and 429 (too many requests) say "not now", not "never", so they retry like
 * 5xx. A 3xx is not followed (the target is a fixed local app) and retries: a redirect there is a
 * deployment mistake that a fix can cure, and --max-attempts still bounds it.
 */
export function classifyForwardStatus(status: number): ForwardVerdict {
  if (status >= 200 && status < 300) return 'ok';
  if (status === 408 || status === 429) return 'retry';
  if (status >= 400 && status < 500) return 'dead-letter';
  return 'retry';
}

let sharedAgent: Agent | undefined;

/** Keep-alive pooling: the app sits on loopback and sees one request per event. */
function defaultDispatcher(): Agent {
  sharedAgent ??= new Agent({ keepAliveTimeout: 30_000, keepAliveMaxTimeout: 120_000 });
  return sharedAgent;
}

/** Validates `--forward-url` once, at the edge; the message names the option. */
export function parseForwardUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(`--forward-url must be an absolute http(s) URL (got ${JSON.stringify(raw)})`, '--forward-url');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ConfigError(`--forward-url must use http or https (got ${url.protocol.replace(':', '')})`, '--forward-url');
  }
  // Credentials in the URL would be logged with it and sent to the app: refuse them.
  if (url.username !== '' || url.password !== '') {
    throw new ConfigError('--forward-url must not contain credentials', '--forward-url');
  }
  return url;
}

/** The target as it may appear in logs and errors: origin and path, never the query. */
function describeTarget(url: URL): string {
  return `${url.origin}${url.pathname}`;
}

/**
 * The request must stop at the lease deadline: after it, the batch is acked failed (or redelivered
 * to another worker) and an answer from the app would be too late to count. A plain timer cleared
 * in `dispose` (not AbortSignal.timeout/any) so nothing outlives the request when leases are long.
 */
function requestSignal(ctx: HandlerContext): { signal: AbortSignal; dispose(): void } {
  const controller = new AbortController();
  const abort = () => controller.abort(ctx.signal.reason);
  if (ctx.signal.aborted) abort();
  else ctx.signal.addEventListener('abort', abort, { once: true });
  const timer = setTimeout(() => controller.abort(new Error('lease deadline reached')), Math.max(0, ctx.deadlineMs - Date.now()));
  return {
    signal: controller.signal,
    dispose() {
      clearTimeout(timer);
      ctx.signal.removeEventListener('abort', abort);
    },
  };
}

function failureOf(err: unknown, target: string, ctx: HandlerContext, signal: AbortSignal): Error {
  if (signal.aborted) {
    if (Date.now() >= ctx.deadlineMs) {
      return new HandlerTimeoutError(`forward to ${target} did not answer before the lease deadline`, { cause: err });
    }
    return new AbortedError(`forward to ${target} was aborted`, { cause: err });
  }
  const code = (err as { code?: unknown } | null)?.code;
  const detail = typeof code === 'string' ? code : err instanceof Error ? err.message : String(err);
  return new DurableWorkerError(ErrorCodes.NETWORK, `forward to ${target} failed: ${detail}`, { cause: err });
}

/** POSTs one event; resolves on 2xx, throws as the module comment says otherwise. */
async function forwardEvent(event: CloudEvent, ctx: HandlerContext, url: URL, mode: ForwardMode, dispatcher: Dispatcher): Promise<void> {
  const target = describeTarget(url);
  const { headers, body } = toForwardRequest(event, mode, handlerScope().activeCarrier());
  const { signal, dispose } = requestSignal(ctx);
  let statusCode: number;
  let retryAfter: string | undefined;
  try {
    const response = await request(url, { method: 'POST', headers, body, signal, dispatcher });
    statusCode = response.statusCode;
    const header = response.headers['retry-after'];
    retryAfter = Array.isArray(header) ? header[0] : header;
    // Drain so the keep-alive socket returns to the pool; the app's body carries no outcome.
    await response.body.dump();
  } catch (err) {
    throw failureOf(err, target, ctx, signal);
  } finally {
    dispose();
  }
  const verdict = classifyForwardStatus(statusCode);
  if (verdict === 'ok') return;
  if (verdict === 'dead-letter') {
    throw new PermanentError(`forward to ${target} answered ${statusCode}: the app rejected event ${event.id}`);
  }
  // "Too many" with a time to come back: the app paces the worker (and lowers an adaptive rate).
  if ((statusCode === 429 || statusCode === 503) && retryAfter !== undefined) {
    throw RetryLaterError.fromRetryAfter(`forward to ${target} answered ${statusCode} (Retry-After: ${retryAfter})`, retryAfter);
  }
  throw new ForwardError(`forward to ${target} answered ${statusCode}`, statusCode);
}

/**
 * Creates the `'*'` handler that forwards every event to `options.url`. Works alone or next to
 * handler modules; the runtime registers it as `@forward`.
 */
export function createForwardingHandler(options: ForwardingHandlerOptions): Handler<'*'> {
  const url = parseForwardUrl(options.url);
  const mode = options.mode ?? 'binary';
  if (mode !== 'binary' && mode !== 'structured') {
    throw new ConfigError(`--forward-mode must be binary or structured (got ${JSON.stringify(mode)})`, '--forward-mode');
  }
  const dispatcher = options.dispatcher ?? defaultDispatcher();
  const limits = forwardLimits(options);
  return defineHandler({
    type: '*',
    handle: (event, ctx) => forwardEvent(event, ctx, url, mode, dispatcher),
    ...(limits === undefined ? {} : { limits }),
  });
}
