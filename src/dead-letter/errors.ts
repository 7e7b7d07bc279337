import { DeadLetterError, ErrorCodes } from '../errors.js';
import { scrubCredentials } from '../idempotency/store-error.js';

/** A dead-letter sink failed: the worker keeps the event retried; the CLI exits 1. */
export const DEAD_LETTER_ERROR_CODE = ErrorCodes.DEAD_LETTER;

/** Wraps a driver failure, keeping its message (the cause) but never a password from a URL. */
export function sinkError(backend: string, operation: string, cause: unknown): DeadLetterError {
  if (cause instanceof DeadLetterError) return cause;
  const detail = cause instanceof Error ? cause.message : String(cause);
  return new DeadLetterError(`${backend} dead-letter sink: ${operation} failed: ${scrubCredentials(detail)}`, { cause });
}

export function closedSinkError(backend: string, operation: string): DeadLetterError {
  return new DeadLetterError(`${backend} dead-letter sink: ${operation} after close()`);
}

/** A reading tool opened the sink for every prefix: it cannot write, the prefix of a record would be unknown. */
export function noPrefixError(backend: string): DeadLetterError {
  return new DeadLetterError(`${backend} dead-letter sink: opened without a prefix, it cannot write records`);
}
