import { StoreError } from '../errors.js';

/**
 * Wraps a driver failure as `DW_ERR_STORE`: the worker fails the affected events and retries them
 * later, and never marks an event done without its effect. The driver's message is kept (it names
 * the cause: ECONNREFUSED, terminated connection...) but never the URL, which may hold a password.
 */
export function storeError(backend: string, operation: string, cause: unknown): StoreError {
  if (cause instanceof StoreError) return cause;
  const detail = cause instanceof Error ? cause.message : String(cause);
  return new StoreError(`${backend} idempotency store: ${operation} failed: ${scrubCredentials(detail)}`, { cause });
}

/** Error raised by an operation on a store that was closed. */
export function closedError(backend: string, operation: string): StoreError {
  return new StoreError(`${backend} idempotency store: ${operation} after close()`);
}

/** Drivers sometimes echo a connection string; hide any `user:password@` that slips into a message. */
export function scrubCredentials(message: string): string {
  return message.replace(/\/\/([^/@:\s]*):[^/@\s]*@/g, '//$1:***@');
}

/**
 * The distinct keys of a batch, in first-seen order. Adapters claim each key once and map the state
 * back to every position (a key repeated in one batch gets the same state twice); PostgreSQL also
 * refuses to upsert one row twice in a statement.
 */
export function distinctKeys(keys: readonly string[]): string[] {
  return [...new Set(keys)];
}
