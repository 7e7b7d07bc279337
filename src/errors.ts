/**
 * Error classes with a stable `code`. Anything that crosses a worker thread loses its prototype
 * (structured clone), so callers branch on `code`, never on `instanceof`.
 */

export const ErrorCodes = {
  /** A handler asked for its event to be dead-lettered at once. */
  PERMANENT: 'DW_ERR_PERMANENT',
  /** A handler failed and said when to try again (RetryLaterError). */
  RETRY_LATER: 'DW_ERR_RETRY_LATER',
  /** Bad CLI/env/file configuration. */
  CONFIG: 'DW_ERR_CONFIG',
  /** A handler module could not be loaded or is not a valid handler. */
  HANDLER_LOAD: 'DW_ERR_HANDLER_LOAD',
  /** A handler ran past its deadline. */
  HANDLER_TIMEOUT: 'DW_ERR_HANDLER_TIMEOUT',
  /** The thread running a handler died. */
  HANDLER_CRASH: 'DW_ERR_HANDLER_CRASH',
  /** The platform answered with a problem (4xx/5xx). */
  API: 'DW_ERR_API',
  /** The issuer refused a token request. */
  AUTH: 'DW_ERR_AUTH',
  /** Network failure talking to the platform (connection refused/reset, timeout). */
  NETWORK: 'DW_ERR_NETWORK',
  /** A typed ingest batch failed client-side validation. */
  INGEST_VALIDATION: 'DW_ERR_INGEST_VALIDATION',
  /** The idempotency store failed. */
  STORE: 'DW_ERR_STORE',
  /** An operation was aborted through its AbortSignal. */
  ABORTED: 'DW_ERR_ABORTED',
  /** A transactional handler used `ctx.tx` after its call ended, or to end the worker's transaction itself. */
  TRANSACTION: 'DW_ERR_TRANSACTION',
  /**
   * An event of a transactional batch call that succeeded, undone with the call's transaction because
   * another event of the call failed: it runs again, and the run is not counted as an attempt.
   */
  ROLLED_BACK: 'DW_ERR_ROLLED_BACK',
  /**
   * A transactional handler's key is locked by another transaction right now (another worker runs the
   * same event after a lease moved): the run waits and is tried again, not counted as an attempt.
   */
  KEY_BUSY: 'DW_ERR_KEY_BUSY',
  /** A dead-letter sink failed (write, read or redrive). */
  DEAD_LETTER: 'DW_ERR_DEAD_LETTER',
  /** The forwarding handler's app answered "not now" (408, 429, 3xx, 5xx): the event is retried. */
  FORWARD: 'DW_ERR_FORWARD',
} as const;

export type ErrorCode = (typeof ErrorCodes)[keyof typeof ErrorCodes];

export class DurableWorkerError extends Error {
  readonly code: string;

  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'DurableWorkerError';
    this.code = code;
  }
}

/**
 * Throw from a handler to dead-letter the event at once instead of retrying it
 * (like BullMQ's UnrecoverableError): the input can never succeed.
 */
export class PermanentError extends DurableWorkerError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(ErrorCodes.PERMANENT, message, options);
    this.name = 'PermanentError';
  }
}

/**
 * Throw from a handler to fail this run and say when to try again: `afterMs` from now, or what a
 * downstream's `Retry-After` header said (`RetryLaterError.fromRetryAfter`). The run counts as an
 * attempt; the wait replaces the backoff, capped by `--retry-backoff-max`.
 */
export class RetryLaterError extends DurableWorkerError {
  /** How long to wait before the next run, in ms. */
  readonly retryAfterMs: number;

  constructor(message: string, options: { afterMs: number; cause?: unknown }) {
    super(ErrorCodes.RETRY_LATER, message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'RetryLaterError';
    this.retryAfterMs = Math.max(0, Number.isFinite(options.afterMs) ? options.afterMs : 0);
  }

  /**
   * From a `Retry-After` header value (delay-seconds or an HTTP date, RFC 9110 10.2.3); a value that
   * is neither falls back to the backoff (afterMs 0 is "no opinion": the worker's backoff applies).
   */
  static fromRetryAfter(message: string, retryAfter: string | null | undefined, options: { cause?: unknown; nowMs?: number } = {}): RetryLaterError {
    return new RetryLaterError(message, { afterMs: parseRetryAfterMs(retryAfter, options.nowMs) ?? 0, cause: options.cause });
  }
}

/** Milliseconds a `Retry-After` value asks to wait (seconds or an HTTP date), or undefined. */
export function parseRetryAfterMs(value: string | null | undefined, nowMs: number = Date.now()): number | undefined {
  if (value === null || value === undefined) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1_000;
  const at = Date.parse(text);
  return Number.isFinite(at) ? Math.max(0, at - nowMs) : undefined;
}

/** Raised at start-up for a handlers folder or module that cannot be used (the CLI exits 2). */
export class HandlerLoadError extends DurableWorkerError {
  /** The file (or folder) at fault. */
  readonly file: string;

  constructor(file: string, message: string, options?: { cause?: unknown }) {
    super(ErrorCodes.HANDLER_LOAD, message, options);
    this.name = 'HandlerLoadError';
    this.file = file;
  }
}

/** A handler ran past its own timeout or its lease's deadline (`DW_ERR_HANDLER_TIMEOUT`). */
export class HandlerTimeoutError extends DurableWorkerError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(ErrorCodes.HANDLER_TIMEOUT, message, options);
    this.name = 'HandlerTimeoutError';
  }
}

/** Work stopped through its AbortSignal: a forced shutdown, or a stopped replay (`DW_ERR_ABORTED`). */
export class AbortedError extends DurableWorkerError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(ErrorCodes.ABORTED, message, options);
    this.name = 'AbortedError';
  }
}

/** The idempotency store failed or was closed (`DW_ERR_STORE`): affected events run again later. */
export class StoreError extends DurableWorkerError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(ErrorCodes.STORE, message, options);
    this.name = 'StoreError';
  }
}

/** A dead-letter sink failed or was closed (`DW_ERR_DEAD_LETTER`): the event stays retried. */
export class DeadLetterError extends DurableWorkerError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(ErrorCodes.DEAD_LETTER, message, options);
    this.name = 'DeadLetterError';
  }
}

/** `ctx.tx` used after its call ended, or to end the worker's transaction (`DW_ERR_TRANSACTION`). */
export class TransactionError extends DurableWorkerError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(ErrorCodes.TRANSACTION, message, options);
    this.name = 'TransactionError';
  }
}

/** Bad configuration: the CLI prints the message on one line and exits 2. */
export class ConfigError extends DurableWorkerError {
  /** The option at fault, as the user spells it (`--limit`). */
  readonly option: string | undefined;

  constructor(message: string, option?: string, options?: { cause?: unknown }) {
    super(ErrorCodes.CONFIG, message, options);
    this.name = 'ConfigError';
    this.option = option;
  }
}

/** True when `err` carries `code`, whatever realm or thread it came from. */
export function hasCode(err: unknown, code: string): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === code;
}

export function isPermanentError(err: unknown): boolean {
  return hasCode(err, ErrorCodes.PERMANENT);
}
