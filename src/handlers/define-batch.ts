import type { CloudEvent } from '../types.js';
import { normalizeBatchResults, type BatchResults } from './batch-results.js';
import { HandlerLoadError } from '../errors.js';
import { unknownOption } from './option-keys.js';
import type { HandlerLimits } from './limits-options.js';
import {
  checkCommonShape,
  HANDLER_BRAND,
  validateEventData,
  type ContextOf,
  type DataSchema,
  type HandlerContext,
  type HandlerEvent,
  type HandlerLifeCycle,
} from './define.js';

/** The `ctx` of a `handleBatch` call: as a single-event handler's, for the whole call. */
export type BatchContext<R = unknown> = HandlerContext<R>;

export interface BatchHandlerDefinition<
  T extends string = string,
  S extends DataSchema | undefined = undefined,
  R = undefined,
  X extends boolean = false,
> extends HandlerLifeCycle<R> {
  /** Event type(s): an exact type, `'prefix.*'`, or `'*'`. */
  type: T | readonly T[];
  /**
   * Optional schema of each event's `data`, checked where the handler runs before `handleBatch`: an
   * event that does not match is dead-lettered alone (EventDataError) and left out of `events`.
   */
  schema?: S;
  /**
   * At most this many events per call (a positive integer). Default: no bound of its own; a call
   * never holds more than one lease's events (`--limit`) nor more than `--max-in-progress`.
   */
  maxBatchSize?: number;
  /**
   * Gets events of one lease that match `type`, in stream order, after the idempotency claims (events
   * already done for this handler are left out). Resolve with nothing = every event ok; or with an
   * array aligned with `events` (BatchResults): `undefined` = ok, an Error = failed (retried), a
   * PermanentError = dead-lettered. Throw = every event of the call failed.
   */
  handleBatch(events: HandlerEvent<T, S>[], ctx: ContextOf<R, X>): void | BatchResults | Promise<void | BatchResults>;
  /** Timeout of one call in ms (default: until the lease deadline). */
  timeoutMs?: number;
  /**
   * The call writes its effects through `ctx.tx`, in one transaction with the done marks of all its
   * events: all of them commit, or none (docs/handlers.md, "Transactional handlers"): when any event
   * of the call fails, the whole call rolls back and its other events run again, without an attempt
   * counted. Needs a `postgres://` idempotency store. Default false.
   */
  transactional?: X;
  /**
   * Rate and concurrency limits on this handler's runs (docs/handlers.md, "Protecting a downstream"):
   * a call counts as its number of events.
   */
  limits?: HandlerLimits;
}

export type BatchHandler<
  T extends string = string,
  S extends DataSchema | undefined = DataSchema | undefined,
  R = unknown,
  X extends boolean = boolean,
> = BatchHandlerDefinition<T, S, R, X> & { readonly [HANDLER_BRAND]: true };

/** Positions whose data failed the schema get their error; the others go to the handler, parsed. */
async function splitBySchema(
  schema: DataSchema,
  events: readonly CloudEvent[],
  handlerName: string,
): Promise<{ valid: CloudEvent[]; at: number[]; results: (Error | undefined)[] }> {
  const valid: CloudEvent[] = [];
  const at: number[] = [];
  const results: (Error | undefined)[] = new Array(events.length).fill(undefined);
  for (let i = 0; i < events.length; i++) {
    const event = events[i] as CloudEvent;
    try {
      const data = await validateEventData(schema, event, handlerName);
      valid.push({ ...event, data });
      at.push(i);
    } catch (err) {
      results[i] = err as Error;
    }
  }
  return { valid, at, results };
}

/**
 * Declares a batch handler module's default export (docs/handlers.md: `defineBatchHandler`,
 * `maxBatchSize`, `handleBatch`). With a `schema`, the returned `handleBatch` validates each event first and always
 * resolves with results aligned with every event it got: schema failures dead-letter alone, and a
 * throw of the user's `handleBatch` fails only the events it was given.
 */
export function defineBatchHandler<const T extends string, S extends DataSchema | undefined = undefined, R = undefined, X extends boolean = false>(
  definition: BatchHandlerDefinition<T, S, R, X>,
): BatchHandler<T, S, R, X> {
  const unknown = unknownOption('defineBatchHandler', definition);
  if (unknown !== undefined) throw new HandlerLoadError('', unknown);
  checkCommonShape('defineBatchHandler', definition);
  if (typeof definition.handleBatch !== 'function') throw new TypeError('defineBatchHandler: `handleBatch` must be a function');
  const max = definition.maxBatchSize;
  if (max !== undefined && (!Number.isInteger(max) || max < 1))
    throw new TypeError(`defineBatchHandler: \`maxBatchSize\` must be a positive integer (got ${String(max)})`);
  const schema = definition.schema;
  if (schema === undefined) return Object.freeze({ ...definition, [HANDLER_BRAND]: true as const });
  const inner = definition.handleBatch;
  return Object.freeze({
    ...definition,
    async handleBatch(events: HandlerEvent<T, S>[], ctx: ContextOf<R, X>): Promise<BatchResults> {
      const { valid, at, results } = await splitBySchema(schema, events as CloudEvent[], ctx.handlerName);
      if (valid.length === 0) return results;
      let own: (Error | undefined)[];
      try {
        own = normalizeBatchResults(await inner.call(definition, valid as HandlerEvent<T, S>[], ctx), valid.length, ctx.handlerName);
      } catch (err) {
        own = new Array(valid.length).fill(err instanceof Error ? err : new Error(String(err)));
      }
      for (let j = 0; j < at.length; j++) results[at[j] as number] = own[j];
      return results;
    },
    [HANDLER_BRAND]: true as const,
  });
}
