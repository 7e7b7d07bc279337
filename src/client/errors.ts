import { DurableWorkerError, ErrorCodes, hasCode } from '../errors.js';
import type { IssuerError, ProblemDetails } from '../types.js';

/**
 * Errors of the platform client, classified once at the HTTP boundary (src/client/http.ts). Callers branch on
 * `code` and ask `isRetryable(err)`; nothing here ever carries request headers, so a bearer token,
 * API key or client secret cannot leak through `message`, `String(err)` or `JSON.stringify(err)`.
 */

/** The platform answered with a status the operation does not accept (4xx/5xx, or a malformed body). */
export class ApiError extends DurableWorkerError {
  readonly status: number;
  /** Parsed `application/problem+json` body, when the server sent one (spec: all error bodies are problem details). */
  readonly problem: ProblemDetails | undefined;
  /** From `Retry-After` (spec: integer seconds, minimum 1), in milliseconds. */
  readonly retryAfterMs: number | undefined;
  readonly method: string;
  /** Request path without the query string (which may carry worker ids, never credentials). */
  readonly path: string;

  constructor(init: {
    status: number;
    method: string;
    path: string;
    problem?: ProblemDetails | undefined;
    retryAfterMs?: number | undefined;
    message?: string;
  }) {
    const summary = init.problem ? problemSummary(init.problem) : '';
    super(ErrorCodes.API, init.message ?? `${init.method} ${init.path} answered ${init.status}${summary ? `: ${summary}` : ''}`);
    this.name = 'ApiError';
    this.status = init.status;
    this.problem = init.problem;
    this.retryAfterMs = init.retryAfterMs;
    this.method = init.method;
    this.path = init.path;
  }
}

/** The request never got an HTTP answer: connection refused or reset, DNS, socket or header timeout. */
export class NetworkError extends DurableWorkerError {
  readonly method: string;
  readonly path: string;

  constructor(init: { method: string; path: string; cause: unknown }) {
    super(ErrorCodes.NETWORK, `${init.method} ${init.path} failed: ${describeCause(init.cause)}`, {
      cause: init.cause,
    });
    this.name = 'NetworkError';
    this.method = init.method;
    this.path = init.path;
  }
}

/** The token issuer refused the client credentials (or answered with something that is not a token). */
export class AuthError extends DurableWorkerError {
  /** HTTP status of the issuer's answer; 0 when there was no usable answer. */
  readonly status: number;
  /** The issuer's error body (spec: `error`, `error_description`), when it sent one. */
  readonly issuer: IssuerError | undefined;
  readonly retryAfterMs: number | undefined;

  constructor(init: { status: number; issuer?: IssuerError | undefined; message: string; retryAfterMs?: number | undefined }) {
    super(ErrorCodes.AUTH, init.message);
    this.name = 'AuthError';
    this.status = init.status;
    this.issuer = init.issuer;
    this.retryAfterMs = init.retryAfterMs;
  }
}

/** A typed ingest request failed client-side validation; nothing was sent. */
export class IngestValidationError extends DurableWorkerError {
  /** Messages keyed by request path, the shape the server uses (spec: `errors` of a validation problem). */
  readonly errors: Record<string, string[]>;

  constructor(errors: Record<string, string[]>) {
    const paths = Object.keys(errors);
    const first = paths[0];
    const firstMessage = first === undefined ? '' : `: ${first}: ${errors[first]?.[0] ?? 'invalid'}`;
    super(ErrorCodes.INGEST_VALIDATION, `typed ingest request is invalid (${paths.length} path${paths.length === 1 ? '' : 's'})${firstMessage}`);
    this.name = 'IngestValidationError';
    this.errors = errors;
  }
}

/** True for an aborted operation (DOMException `AbortError`, undici's abort, or our ABORTED code). */
export function isAbortError(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const { name, code } = err as { name?: unknown; code?: unknown };
  return name === 'AbortError' || code === 'ABORT_ERR' || code === 'UND_ERR_ABORTED' || code === ErrorCodes.ABORTED;
}

/**
 * Whether repeating the same request may succeed. Retryable: 429, 408, every 5xx (spec: "Typed
 * ingest and reads 429 ... 5xx transient; retry with bounded exponential backoff"), network errors,
 * and an issuer answering 429/5xx. Not retryable: other 4xx, aborts, validation, anything unknown.
 * Branches on `code` so it works on errors that crossed a thread (structured clone drops prototypes).
 */
export function isRetryable(err: unknown): boolean {
  if (isAbortError(err)) return false;
  if (hasCode(err, ErrorCodes.NETWORK)) return true;
  if (hasCode(err, ErrorCodes.API) || hasCode(err, ErrorCodes.AUTH)) {
    return isRetryableStatus((err as { status?: unknown }).status);
  }
  return false;
}

export function isRetryableStatus(status: unknown): boolean {
  return typeof status === 'number' && (status === 429 || status === 408 || (status >= 500 && status <= 599));
}

type HeaderBag = Headers | Record<string, string | string[] | undefined> | undefined;

/**
 * `Retry-After` in milliseconds, or undefined when absent or unreadable. The spec sends integer
 * seconds with a minimum of 1; we are liberal and also accept fractional seconds and an HTTP-date
 * (RFC 9110), and clamp anything below one second (including a date in the past) to 1000 ms.
 */
export function retryAfterMs(headers: HeaderBag, nowMs: number = Date.now()): number | undefined {
  const raw = readHeader(headers, 'retry-after');
  if (raw === undefined) return undefined;
  const text = raw.trim();
  if (text === '') return undefined;
  if (/^\d+(\.\d+)?$/.test(text)) {
    return Math.max(1000, Math.ceil(Number(text) * 1000));
  }
  // Date.parse reads bare numbers like "-5" as years; an HTTP-date always names a month.
  const dateMs = /[a-z]/i.test(text) ? Date.parse(text) : Number.NaN;
  if (Number.isNaN(dateMs)) return undefined;
  return Math.max(1000, dateMs - nowMs);
}

function readHeader(headers: HeaderBag, name: string): string | undefined {
  if (headers === undefined) return undefined;
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  const bag = headers as Record<string, string | string[] | undefined>;
  const key = Object.keys(bag).find((candidate) => candidate.toLowerCase() === name);
  const value = key === undefined ? undefined : bag[key];
  return Array.isArray(value) ? value[0] : value;
}

function problemSummary(problem: ProblemDetails): string {
  const parts = [problem.title, problem.detail].filter((part) => typeof part === 'string' && part !== '');
  return parts.join(' - ').slice(0, 500);
}

function describeCause(cause: unknown): string {
  if (cause instanceof Error) {
    const code = (cause as { code?: unknown }).code;
    return typeof code === 'string' ? `${code}: ${cause.message}` : cause.message || cause.name;
  }
  return String(cause);
}
