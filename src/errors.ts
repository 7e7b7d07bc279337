/**
 * Error classes with a stable `code`. Anything that crosses a worker thread loses its prototype
 * (structured clone), so callers branch on `code`, never on `instanceof`.
 */

export const ErrorCodes = {
  /** A handler asked for its event to be dead-lettered at once. */
  PERMANENT: 'DW_ERR_PERMANENT',
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
