import type { CloudEvent, SourceEntryUpdatedData } from '../types.js';

/** Known event types and their `data`; other types carry `unknown` data. */
export interface EventTypeMap {
  'source_entry.updated': SourceEntryUpdatedData;
}

/** The event a handler receives for a type pattern: typed data for known exact types. */
export type EventFor<T extends string> = T extends keyof EventTypeMap ? CloudEvent<T, EventTypeMap[T]> : CloudEvent<string, unknown>;

/** Minimal structured logger handed to handlers (a pino child logger in practice). */
export interface HandlerLogger {
  debug(obj: object | string, msg?: string): void;
  info(obj: object | string, msg?: string): void;
  warn(obj: object | string, msg?: string): void;
  error(obj: object | string, msg?: string): void;
}

export interface HandlerContext {
  /** Aborts at the lease deadline or at forced shutdown: pass it to every I/O call. */
  signal: AbortSignal;
  log: HandlerLogger;
  /** Delivery attempt of the batch (1 on first delivery). */
  attempt: number;
  /** Lease generation (grows when an expired or failed lease is redelivered). */
  generation: number;
  workerId: string;
  leaseId: string;
  /** This handler's name: its file path in the handlers folder without extension. */
  handlerName: string;
  /** Epoch ms at which `signal` aborts. */
  deadlineMs: number;
}

export interface HandlerDefinition<T extends string = string> {
  /** Event type(s): an exact type, `'prefix.*'`, or `'*'`. */
  type: T | readonly T[];
  /** Resolve = ok; throw = retried; throw PermanentError = dead-lettered at once. */
  handle(event: EventFor<T>, ctx: HandlerContext): unknown | Promise<unknown>;
  /** Per-event timeout in ms (default: until the lease deadline). */
  timeoutMs?: number;
}

export const HANDLER_BRAND = Symbol.for('durable-worker.handler');

export type Handler<T extends string = string> = HandlerDefinition<T> & { readonly [HANDLER_BRAND]: true };

/** Declares a handler module's default export. Validates its shape at load time. */
export function defineHandler<const T extends string>(definition: HandlerDefinition<T>): Handler<T> {
  const types = Array.isArray(definition.type) ? definition.type : [definition.type];
  if (types.length === 0 || types.some((t) => typeof t !== 'string' || t.length === 0)) {
    throw new TypeError('defineHandler: `type` must be a non-empty string or array of strings');
  }
  if (typeof definition.handle !== 'function') {
    throw new TypeError('defineHandler: `handle` must be a function');
  }
  return Object.freeze({ ...definition, [HANDLER_BRAND]: true as const });
}
