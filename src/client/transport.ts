import type { IncomingHttpHeaders } from 'node:http';
import type { ProblemDetails } from '../types.js';
import { ApiError, retryAfterMs } from './errors.js';
import { exchange, joinUrl, parseJsonText, type RawResponse } from './http.js';
import type { HttpDispatcher } from './lazy-undici.js';
import { NO_RETRY, withRetry, type RetryPolicy } from './retry.js';
import type { AppliedCredential, Credential } from './token-provider.js';

/**
 * The one path every resource module (consumers.ts, sources.ts, and later tags, destinations,
 * access catalog, legacy import) takes to the platform: credentials, the single 401 refresh,
 * retries, status classification and liberal JSON parsing live here, once.
 */

export type QueryValue = string | number | boolean | readonly string[] | undefined;

export interface SendRequest {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Absolute path below the base URL, parameters already encoded (use `pathOf`). */
  path: string;
  /** Arrays become repeated parameters (`id=a&id=b`); undefined values are left out. */
  query?: Record<string, QueryValue>;
  /** Sent as JSON when defined. */
  body?: unknown;
  signal?: AbortSignal | undefined;
  /** Statuses answered as results instead of thrown as ApiError. Default: 200..299. */
  accept?: readonly number[];
  /** Retry per the client's policy (true) or not at all (false, the default). */
  retry?: boolean;
  /** Which failures to retry when `retry` is on. Default `isRetryable`. */
  retryable?: (err: unknown) => boolean;
}

export interface SendResult {
  status: number;
  headers: IncomingHttpHeaders;
  /** Parsed JSON body; undefined when the body was empty. */
  body: unknown;
}

export interface Send {
  send(request: SendRequest): Promise<SendResult>;
}

export interface TransportOptions {
  baseUrl: string;
  dispatcher: HttpDispatcher;
  /** Undefined: requests go without a credential (public destinations). */
  credential: Credential | undefined;
  retryPolicy: RetryPolicy;
  /** Send `Accept-Encoding: gzip` (destinations: opt-in compression). Default false. */
  acceptGzip?: boolean;
  userAgent: string;
  requestTimeoutMs: number;
}

export class Transport implements Send {
  readonly #options: TransportOptions;

  constructor(options: TransportOptions) {
    this.#options = options;
  }

  async send(request: SendRequest): Promise<SendResult> {
    const policy = request.retry ? this.#options.retryPolicy : NO_RETRY;
    const retryable = request.retryable;
    return withRetry(() => this.#sendOnce(request), policy, request.signal, retryable ? { retryable } : {});
  }

  async #sendOnce(request: SendRequest): Promise<SendResult> {
    const url = joinUrl(this.#options.baseUrl, request.path);
    appendQuery(url.searchParams, request.query);
    const body = request.body === undefined ? undefined : JSON.stringify(request.body);

    const credential = this.#options.credential;
    let applied = await credential?.apply(request.signal);
    let response = await this.#exchange(url, request, body, applied);
    if (response.status === 401 && credential && applied?.refreshable) {
      // A token can be revoked or rotated before its expiry: refresh once and repeat once; a second
      // 401 is final (no loop) and surfaces as ApiError 401.
      credential.invalidate(applied);
      applied = await credential.apply(request.signal);
      response = await this.#exchange(url, request, body, applied);
    }
    return classify(request, url.pathname, response);
  }

  #exchange(url: URL, request: SendRequest, body: string | undefined, applied: AppliedCredential | undefined): Promise<RawResponse> {
    const headers: Record<string, string> = {
      accept: 'application/json, application/problem+json',
      'user-agent': this.#options.userAgent,
    };
    if (applied) headers[applied.header] = applied.value;
    if (this.#options.acceptGzip) headers['accept-encoding'] = 'gzip';
    if (body !== undefined) headers['content-type'] = 'application/json';
    return exchange(this.#options.dispatcher, {
      url,
      method: request.method,
      headers,
      ...(body === undefined ? {} : { body }),
      signal: request.signal,
      timeoutMs: this.#options.requestTimeoutMs,
    });
  }
}

function classify(request: SendRequest, path: string, response: RawResponse): SendResult {
  const accepted = request.accept ? request.accept.includes(response.status) : response.status >= 200 && response.status <= 299;
  if (!accepted) {
    throw new ApiError({
      status: response.status,
      method: request.method,
      path,
      problem: readProblem(response),
      retryAfterMs: retryAfterMs(response.headers),
    });
  }
  let body: unknown;
  try {
    body = parseJsonText(response.text);
  } catch {
    throw new ApiError({
      status: response.status,
      method: request.method,
      path,
      message: `${request.method} ${path} answered ${response.status} with a body that is not JSON`,
    });
  }
  return { status: response.status, headers: response.headers, body };
}

/**
 * Problem details read liberally: any JSON object is taken, missing fields get neutral values and
 * unknown extension members are kept (RFC 9457 allows them). `errors` is kept only in the shape
 * the spec requires (path -> string[]).
 */
export function readProblem(response: Pick<RawResponse, 'status' | 'text'>): ProblemDetails | undefined {
  let parsed: unknown;
  try {
    parsed = parseJsonText(response.text);
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return undefined;
  const raw = parsed as Record<string, unknown>;
  const text = (key: string, fallback: string): string => (typeof raw[key] === 'string' ? (raw[key] as string) : fallback);
  const problem: ProblemDetails = {
    ...raw,
    type: text('type', 'about:blank'),
    title: text('title', ''),
    status: typeof raw.status === 'number' ? raw.status : Number(raw.status ?? response.status) || response.status,
    detail: text('detail', ''),
    instance: text('instance', ''),
    traceId: text('traceId', ''),
  };
  const errors = readErrors(raw.errors);
  if (errors) problem.errors = errors;
  else delete problem.errors;
  return problem;
}

function readErrors(value: unknown): Record<string, string[]> | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const out: Record<string, string[]> = {};
  for (const [path, messages] of Object.entries(value)) {
    if (Array.isArray(messages)) out[path] = messages.map(String);
    else if (typeof messages === 'string') out[path] = [messages];
  }
  return out;
}

function appendQuery(params: URLSearchParams, query: Record<string, QueryValue> | undefined): void {
  if (!query) return;
  for (const [name, value] of Object.entries(query)) {
    if (value === undefined) continue;
    if (Array.isArray(value)) for (const item of value) params.append(name, String(item));
    else params.append(name, String(value));
  }
}

/** Builds a path from literal parts and parameters, URL-encoding each parameter as one segment. */
export function pathOf(strings: TemplateStringsArray, ...params: string[]): string {
  let path = strings[0] ?? '';
  params.forEach((param, index) => {
    path += encodeURIComponent(param) + (strings[index + 1] ?? '');
  });
  return path;
}

/** Rejects an empty or non-string path parameter before anything is sent. */
export function requireId(name: string, value: unknown): string {
  if (typeof value !== 'string' || value === '') {
    throw new TypeError(`${name} must be a non-empty string (got ${JSON.stringify(value)})`);
  }
  return value;
}
