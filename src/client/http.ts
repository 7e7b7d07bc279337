import type { Dispatcher } from 'undici';
import { EventEmitter } from 'node:events';
import { gunzipSync } from 'node:zlib';
import type { IncomingHttpHeaders } from 'node:http';
import { whenAborted } from '../runtime/abort-fanout.js';
import { NetworkError, isAbortError } from './errors.js';
import { loadUndici, resolveDispatcher, type HttpDispatcher } from './lazy-undici.js';

/**
 * One HTTP exchange through undici, classified at this boundary, once for every caller: the caller's
 * abort comes back as its own `signal.reason`; every other failure to get a complete answer
 * (refused, reset, DNS, our per-request deadline) becomes a `NetworkError`. The body is always read
 * to the end so the keep-alive connection goes back to the pool.
 */
export interface RawExchange {
  url: URL;
  method: string;
  headers: Record<string, string>;
  body?: string;
  /** The caller's signal: aborting it rejects with `signal.reason`, never a NetworkError. */
  signal?: AbortSignal | undefined;
  /** Deadline for the whole exchange (headers and body), in ms; on expiry a NetworkError. */
  timeoutMs: number;
}

export interface RawResponse {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
}

/**
 * What aborts one exchange: the caller's signal or our deadline. An EventEmitter, which undici takes
 * as a request signal as well as an AbortSignal (its documented `signal` option): a worker makes two
 * exchanges per batch, and an EventEmitter is much cheaper to make than an AbortController.
 */
class ExchangeAborter extends EventEmitter {
  aborted = false;
  reason: unknown = undefined;

  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.emit('abort');
  }
}

export async function exchange(dispatcher: HttpDispatcher, init: RawExchange): Promise<RawResponse> {
  const { request } = await loadUndici();
  const callerSignal = init.signal;
  callerSignal?.throwIfAborted();
  // The caller's signal is watched through the shared fan-out and unwatched in `finally`: a
  // long-lived worker signal gets one listener, not one per request (adding and removing an
  // AbortSignal listener is not cheap either).
  const aborter = new ExchangeAborter();
  let timedOut = false;
  const callerWatch = callerSignal === undefined ? undefined : whenAborted(callerSignal, (reason) => aborter.abort(reason));
  const deadline = setTimeout(() => {
    timedOut = true;
    aborter.abort(new Error(`no complete answer within ${init.timeoutMs} ms`));
  }, init.timeoutMs);
  deadline.unref();
  try {
    const response = await request(init.url, {
      dispatcher: await resolveDispatcher(dispatcher),
      method: init.method as Dispatcher.HttpMethod,
      headers: init.headers,
      body: init.body ?? null,
      signal: aborter,
    });
    // undici does not decode content codings; a gzip answer (destinations, spec: opt-in via
    // Accept-Encoding) is inflated here, so callers always see text.
    const encoding = String(response.headers['content-encoding'] ?? '')
      .trim()
      .toLowerCase();
    if (encoding === 'gzip' || encoding === 'x-gzip') {
      const raw = Buffer.from(await response.body.arrayBuffer());
      return { status: response.statusCode, headers: response.headers, text: raw.length === 0 ? '' : gunzipSync(raw).toString('utf8') };
    }
    const text = await response.body.text();
    return { status: response.statusCode, headers: response.headers, text };
  } catch (err) {
    if (callerSignal?.aborted) throw callerSignal.reason;
    if (!timedOut && isAbortError(err)) throw err;
    throw new NetworkError({ method: init.method, path: init.url.pathname, cause: timedOut ? aborter.reason : err });
  } finally {
    clearTimeout(deadline);
    callerWatch?.cancel();
  }
}

/** Parses a JSON body liberally: empty means undefined, unparseable means a thrown SyntaxError. */
export function parseJsonText(text: string): unknown {
  return text.trim() === '' ? undefined : (JSON.parse(text) as unknown);
}

/** Waits for `promise`, but rejects with `signal.reason` as soon as the caller aborts. */
export function untilAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  signal.throwIfAborted();
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}

/** `base` plus an absolute `path`, keeping any path prefix of `base` (`http://h/api` + `/x` = `http://h/api/x`). */
export function joinUrl(base: string, path: string): URL {
  const url = new URL(base);
  url.pathname = `${url.pathname.replace(/\/+$/, '')}${path}`;
  url.search = '';
  url.hash = '';
  return url;
}
