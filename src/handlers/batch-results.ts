/**
 * What `handleBatch` resolves with (docs/handlers.md, "Many events at a time"): nothing, when every event of
 * the call is ok, or an array aligned with `events`, one entry per event: `undefined` (or `null`) =
 * ok, an `Error` = that event failed (retried), a `PermanentError` = that event is dead-lettered at
 * once. A throw fails every event of the call (a thrown PermanentError dead-letters them all).
 */
export type BatchEventResult = Error | null | undefined | void;
export type BatchResults = readonly BatchEventResult[];

/** An entry that is an error (an Error, or an error-like object from another realm: it has a `message`). */
function isErrorLike(value: unknown): value is Error {
  return value instanceof Error || (typeof value === 'object' && value !== null && typeof (value as { message?: unknown }).message === 'string');
}

function describe(value: unknown): string {
  if (Array.isArray(value)) return `an array of ${value.length}`;
  return value === null ? 'null' : typeof value;
}

/**
 * The per-event results of a call of `count` events, each undefined (ok) or an Error. Throws a
 * TypeError naming the problem for anything else: a wrong length is a bug in the handler, and
 * guessing which event an entry meant would mark the wrong ones done.
 */
export function normalizeBatchResults(value: unknown, count: number, handlerName: string): (Error | undefined)[] {
  if (value === undefined || value === null) return new Array<undefined>(count).fill(undefined);
  if (!Array.isArray(value)) {
    throw new TypeError(
      `handleBatch of ${handlerName} must resolve with nothing or an array of ${count} results aligned with its events (got ${describe(value)})`,
    );
  }
  if (value.length !== count) {
    throw new TypeError(`handleBatch of ${handlerName} resolved with ${value.length} results for ${count} events (one per event, in the order of \`events\`)`);
  }
  const results: (Error | undefined)[] = new Array(count);
  for (let i = 0; i < count; i++) {
    const entry: unknown = value[i];
    if (entry === undefined || entry === null) results[i] = undefined;
    else if (isErrorLike(entry)) results[i] = entry;
    else throw new TypeError(`handleBatch of ${handlerName}: result ${i} must be undefined (ok) or an Error (got ${describe(entry)})`);
  }
  return results;
}
