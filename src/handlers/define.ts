import { HandlerLoadError, PermanentError } from '../errors.js';
import type { CloudEvent, SourceEntryUpdatedData } from '../types.js';
import { unknownOption } from './option-keys.js';
import type { HandlerLimits } from './limits-options.js';
import type { TransactionClient } from './transaction-client.js';

/** Known event types and their `data`; other types carry `unknown` data. */
export interface EventTypeMap {
  'source_entry.updated': SourceEntryUpdatedData;
}

/** The `type` an event of pattern `T` can have: the pattern itself when exact, any string for `prefix.*` and `*`. */
export type EventTypeName<T extends string> = T extends `${string}*` ? string : T;

/** The event a handler receives for a type pattern: typed data for known exact types. */
export type EventFor<T extends string> = T extends keyof EventTypeMap ? CloudEvent<T, EventTypeMap[T]> : CloudEvent<EventTypeName<T>, unknown>;

/**
 * A data schema: any validator implementing Standard Schema v1 (https://standardschema.dev), which
 * zod 4 schemas do (`z.object({...})`). Structural, so the user's own copy of zod fits.
 */
export interface DataSchema<Output = unknown> {
  readonly '~standard': {
    readonly version: 1;
    readonly vendor: string;
    readonly validate: (value: unknown) => DataSchemaResult<Output> | Promise<DataSchemaResult<Output>>;
    readonly types?: { readonly input: unknown; readonly output: Output } | undefined;
  };
}

/** One problem reported by a {@link DataSchema}. */
export interface DataSchemaIssue {
  readonly message: string;
  readonly path?: ReadonlyArray<PropertyKey | { readonly key: PropertyKey }> | undefined;
}

export type DataSchemaResult<Output> = { readonly value: Output; readonly issues?: undefined } | { readonly issues: ReadonlyArray<DataSchemaIssue> };

/** The event `handle` receives: typed by the schema's output when there is one, else by the type. */
export type HandlerEvent<T extends string, S extends DataSchema | undefined> = S extends DataSchema<infer O> ? CloudEvent<EventTypeName<T>, O> : EventFor<T>;

/** Minimal structured logger handed to handlers (a pino child logger in practice). */
export interface HandlerLogger {
  debug(obj: object | string, msg?: string): void;
  info(obj: object | string, msg?: string): void;
  warn(obj: object | string, msg?: string): void;
  error(obj: object | string, msg?: string): void;
}

/**
 * What `setup` and `teardown` get: one call per handler module and per thread (thread isolation) or
 * once per process (isolation none).
 */
export interface LifeCycleContext {
  /** This handler's name: its file path in the handlers folder without extension. */
  handlerName: string;
  log: HandlerLogger;
  /**
   * `setup`: aborts when the worker stops before setup succeeded. `teardown`: aborts when the
   * shutdown timeout runs out (the worker stops waiting for it).
   */
  signal: AbortSignal;
}

/** What `teardown` gets: the life-cycle context and what `setup` returned. */
export interface TeardownContext<R = unknown> extends LifeCycleContext {
  resources: R;
}

export interface HandlerContext<R = unknown> {
  /** Aborts at the lease deadline or at forced shutdown: pass it to every I/O call. */
  signal: AbortSignal;
  log: HandlerLogger;
  /**
   * This handler's attempt on this event: 1 on its first run, then its failed runs so far + 1
   * (deliveries in which it did not run do not count). At `--max-attempts` a failure dead-letters
   * the event. In a batch call: the highest attempt among its events.
   */
  attempt: number;
  /** How often the platform handed out the lease that carries the event (its delivery attempt, 1 first). */
  deliveryAttempt: number;
  /** Lease generation (grows when an expired or failed lease is redelivered). */
  generation: number;
  workerId: string;
  leaseId: string;
  /** This handler's name: its file path in the handlers folder without extension. */
  handlerName: string;
  /** Epoch ms at which `signal` aborts. */
  deadlineMs: number;
  /** What the handler's `setup` returned (in this thread); undefined without `setup`. */
  resources: R;
  /**
   * Transactional handlers only (`transactional: true`; undefined for the others): a `pg` client
   * inside the worker's open transaction, on the database of the `postgres://` idempotency store.
   * Its writes commit together with the done marks of the call's events, or roll back with them.
   * Valid until the call ends; the worker begins and ends the transaction, never the handler.
   */
  tx?: TransactionClient;
}

/** The `ctx` of a transactional handler: `tx` is always there. */
export interface TransactionalContext<R = unknown> extends HandlerContext<R> {
  tx: TransactionClient;
}

/** The `ctx` a handler gets: with `tx` when it declares `transactional: true`. */
export type ContextOf<R, X extends boolean> = X extends true ? TransactionalContext<R> : HandlerContext<R>;

/** The optional life cycle of a handler module (either kind). */
export interface HandlerLifeCycle<R = unknown> {
  /**
   * Runs before the first event this handler gets, once per worker thread (thread isolation) or once
   * per process (isolation none); its result is `ctx.resources`. Declare it before `handle` /
   * `handleBatch` so TypeScript infers the resources' type. Until it succeeded for every handler,
   * `/readyz` answers 503 and nothing is pulled; a failure is logged with the handler's name and
   * retried with backoff (1 s doubling to 30 s). `durable-worker check --setup` runs it once.
   */
  setup?(ctx: LifeCycleContext): R | Promise<R>;
  /**
   * Runs once at drain, after the last event of this handler (per thread, or once per process), when
   * `setup` succeeded. Bounded by `--shutdown-timeout`: `ctx.signal` aborts when the worker stops
   * waiting. A throw is logged; the worker stops anyway.
   */
  teardown?(ctx: TeardownContext<R>): unknown | Promise<unknown>;
}

export interface HandlerDefinition<
  T extends string = string,
  S extends DataSchema | undefined = undefined,
  R = undefined,
  X extends boolean = false,
> extends HandlerLifeCycle<R> {
  /** Event type(s): an exact type, `'prefix.*'`, or `'*'`. */
  type: T | readonly T[];
  /**
   * Optional schema of `data` (a zod schema, or any Standard Schema). It runs before `handle`, where
   * the handler runs (main thread or worker thread); `handle` gets the parsed value. A mismatch
   * throws {@link EventDataError}, a PermanentError: the event is dead-lettered at once, since
   * redelivering the same data can never succeed.
   */
  schema?: S;
  /** Resolve = ok; throw = retried; throw PermanentError = dead-lettered at once. */
  handle(event: HandlerEvent<T, S>, ctx: ContextOf<R, X>): unknown | Promise<unknown>;
  /** Per-event timeout in ms (default: until the lease deadline). */
  timeoutMs?: number;
  /**
   * The handler writes its effects through `ctx.tx`, in the worker's transaction: they commit
   * together with the event's done mark, or not at all (docs/handlers.md, "Transactional handlers").
   * Needs a `postgres://` idempotency store, the database that holds the effects. Default false.
   */
  transactional?: X;
  /**
   * Rate and concurrency limits on this handler's runs, for the handler and per key
   * (docs/handlers.md, "Protecting a downstream"). Waiting for a permit spends no attempt.
   */
  limits?: HandlerLimits;
}

export const HANDLER_BRAND = Symbol.for('durable-worker.handler');

export type Handler<
  T extends string = string,
  S extends DataSchema | undefined = DataSchema | undefined,
  R = unknown,
  X extends boolean = boolean,
> = HandlerDefinition<T, S, R, X> & { readonly [HANDLER_BRAND]: true };

/** An event's `data` did not match its handler's schema: dead-lettered at once (code DW_ERR_PERMANENT). */
export class EventDataError extends PermanentError {
  readonly issues: readonly { path: string; message: string }[];

  constructor(message: string, issues: readonly { path: string; message: string }[]) {
    super(message);
    this.name = 'EventDataError';
    this.issues = issues;
  }
}

/** `current.properties[0].value` from a Standard Schema path. */
function formatPath(path: DataSchemaIssue['path']): string {
  let out = 'data';
  for (const segment of path ?? []) {
    const key = typeof segment === 'object' && segment !== null ? segment.key : segment;
    out += typeof key === 'number' ? `[${key}]` : `.${String(key)}`;
  }
  return out;
}

const MAX_LISTED_ISSUES = 5;

/** Validates `event.data`; returns the parsed value or throws EventDataError naming paths, never values. */
export async function validateEventData(schema: DataSchema, event: CloudEvent, handlerName: string): Promise<unknown> {
  const result = await schema['~standard'].validate(event.data);
  if (result.issues === undefined) return result.value;
  const issues = result.issues.map((issue) => ({ path: formatPath(issue.path), message: issue.message }));
  const listed = issues.slice(0, MAX_LISTED_ISSUES).map((i) => `${i.path}: ${i.message}`);
  if (issues.length > MAX_LISTED_ISSUES) listed.push(`and ${issues.length - MAX_LISTED_ISSUES} more`);
  throw new EventDataError(`event ${event.id} (${event.type}) does not match the data schema of handler ${handlerName}: ${listed.join('; ')}`, issues);
}

/** Checks what both kinds of handler share: `type`, `schema`, `setup`, `teardown`, `transactional`. */
export function checkCommonShape(
  caller: string,
  definition: { type?: unknown; schema?: unknown; setup?: unknown; teardown?: unknown; transactional?: unknown },
): void {
  const types = Array.isArray(definition.type) ? (definition.type as unknown[]) : [definition.type];
  if (types.length === 0 || types.some((t) => typeof t !== 'string' || t.length === 0)) {
    throw new TypeError(`${caller}: \`type\` must be a non-empty string or array of strings`);
  }
  if (definition.schema !== undefined && !isDataSchema(definition.schema))
    throw new TypeError(`${caller}: \`schema\` must be a zod schema (or another Standard Schema validator)`);
  for (const hook of ['setup', 'teardown'] as const) {
    if (definition[hook] !== undefined && typeof definition[hook] !== 'function') throw new TypeError(`${caller}: \`${hook}\` must be a function`);
  }
  const problem = transactionalProblem(definition.transactional);
  if (problem !== undefined) throw new TypeError(`${caller}: ${problem}`);
}

/** What is wrong with a `transactional` value, or undefined: it must be a boolean when given. */
export function transactionalProblem(value: unknown): string | undefined {
  if (value === undefined || typeof value === 'boolean') return undefined;
  return `\`transactional\` must be true or false (got ${typeof value === 'string' ? JSON.stringify(value) : String(value)})`;
}

function isDataSchema(value: unknown): value is DataSchema {
  const standard = (value as { '~standard'?: { validate?: unknown } } | null)?.['~standard'];
  return typeof standard === 'object' && standard !== null && typeof standard.validate === 'function';
}

/**
 * Declares a handler module's default export. Validates its shape at load time; with a `schema`,
 * the returned `handle` validates `data` first, so both dispatchers (in-process and worker threads)
 * validate where the handler runs without knowing about schemas.
 */
export function defineHandler<const T extends string, S extends DataSchema | undefined = undefined, R = undefined, X extends boolean = false>(
  definition: HandlerDefinition<T, S, R, X>,
): Handler<T, S, R, X> {
  const unknown = unknownOption('defineHandler', definition);
  if (unknown !== undefined) throw new HandlerLoadError('', unknown);
  checkCommonShape('defineHandler', definition);
  if (typeof definition.handle !== 'function') {
    throw new TypeError('defineHandler: `handle` must be a function');
  }
  const schema = definition.schema;
  if (schema === undefined) return Object.freeze({ ...definition, [HANDLER_BRAND]: true as const });
  const inner = definition.handle;
  return Object.freeze({
    ...definition,
    async handle(event: HandlerEvent<T, S>, ctx: ContextOf<R, X>) {
      const data = await validateEventData(schema, event as CloudEvent, ctx.handlerName);
      return inner.call(definition, { ...event, data } as HandlerEvent<T, S>, ctx);
    },
    [HANDLER_BRAND]: true as const,
  });
}
