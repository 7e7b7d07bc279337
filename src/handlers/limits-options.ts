import { z } from 'zod';
import { parseDurationMs } from '../runtime/duration.js';
import type { CloudEvent } from '../types.js';

/** A rate: at most `max` run starts in any window of length `per`. */
export interface RateLimit {
  /**
   * Run starts allowed in any window of `per` (a positive integer). Optional only with
   * `adaptive: true`, where the worker finds the downstream's limit itself.
   */
  max?: number;
  /** The window: a duration (`'1s'`, `'500ms'`, `'1m'`) or a number of milliseconds. */
  per: string | number;
}

/** Limits kept separately for each value of `key(event)` (a customer, a tenant, a subject). */
export interface PerKeyLimits {
  /** The key of an event; events with the same key share the limits below. */
  key: (event: CloudEvent) => string;
  rate?: RateLimit;
  /** Runs in flight at once for one key. */
  concurrency?: number;
}

/**
 * What a handler may do to its downstream (docs/handlers.md, "Protecting a downstream"). With a
 * `redis://` or `postgres://` idempotency store they hold across every replica sharing it; with
 * `memory` or `sqlite:` per process. A batch call counts as its number of events. Waiting for a
 * permit spends no attempt.
 */
export interface HandlerLimits {
  /** At most `max` run starts in any window of `per`, for the handler as a whole. */
  rate?: RateLimit;
  /** Runs in flight at once, for the handler as a whole. */
  concurrency?: number;
  perKey?: PerKeyLimits;
  /**
   * A `RetryLaterError` (or a 429/503 answer to the forwarding handler) lowers the allowed rate
   * multiplicatively; it recovers additively up to `max` (AIMD). Without a `max`, the worker finds the
   * limit itself. Default false.
   */
  adaptive?: boolean;
}

/** A rate as the limiter takes it: `max` per `perMs`; `max` undefined = found adaptively. */
export interface ResolvedRate {
  max: number | undefined;
  perMs: number;
}

/** `limits` after validation, in the units the limiter uses. */
export interface ResolvedLimits {
  rate?: ResolvedRate;
  concurrency?: number;
  perKey?: { key: (event: CloudEvent) => string; rate?: ResolvedRate; concurrency?: number };
  adaptive: boolean;
}

const positiveInteger = z.number().int().positive();

/** `per`: a number is milliseconds here (the contract's "a duration or ms"), a string a duration. */
const window = z.union([z.number(), z.string()]).transform((value, ctx) => {
  const ms = typeof value === 'number' ? value : parseDurationMs(value);
  if (ms === undefined || !Number.isFinite(ms) || ms < 1) {
    ctx.addIssue({ code: 'custom', message: `must be a duration like '1s' or '1m', or a number of milliseconds >= 1 (got ${JSON.stringify(value)})` });
    return z.NEVER;
  }
  return ms;
});

const rate = z.strictObject({ max: positiveInteger.optional(), per: window });
const keyFunction = z.custom<(event: CloudEvent) => string>((value) => typeof value === 'function', 'must be a function (event) => string');

export const limitsSchema = z
  .strictObject({
    rate: rate.optional(),
    concurrency: positiveInteger.optional(),
    perKey: z.strictObject({ key: keyFunction, rate: rate.optional(), concurrency: positiveInteger.optional() }).optional(),
    adaptive: z.boolean().optional(),
  })
  .superRefine((limits, ctx) => {
    const adaptive = limits.adaptive === true;
    for (const [path, r] of [
      [['rate'], limits.rate],
      [['perKey', 'rate'], limits.perKey?.rate],
    ] as const) {
      if (r !== undefined && r.max === undefined && !adaptive)
        ctx.addIssue({ code: 'custom', path: [...path, 'max'], message: 'is required unless `adaptive: true`' });
    }
    if (limits.perKey !== undefined && limits.perKey.rate === undefined && limits.perKey.concurrency === undefined) {
      ctx.addIssue({ code: 'custom', path: ['perKey'], message: 'needs `rate` or `concurrency`' });
    }
    if (limits.rate === undefined && limits.concurrency === undefined && limits.perKey === undefined && !adaptive) {
      ctx.addIssue({ code: 'custom', message: 'declares nothing: give `rate`, `concurrency`, `perKey` or `adaptive: true`' });
    }
  });

/** The default window of a rate found adaptively (`adaptive: true` without `rate`). */
export const ADAPTIVE_DEFAULT_PER_MS = 1_000;

/** Validated limits in the limiter's units (`limitsSchema` has accepted `value`). */
export function resolveLimits(value: z.output<typeof limitsSchema>): ResolvedLimits {
  const resolveRate = (r: { max?: number | undefined; per: number } | undefined): ResolvedRate | undefined =>
    r === undefined ? undefined : { max: r.max, perMs: r.per };
  const adaptive = value.adaptive === true;
  const out: ResolvedLimits = { adaptive };
  const handlerRate =
    resolveRate(value.rate) ?? (adaptive && value.perKey?.rate === undefined ? { max: undefined, perMs: ADAPTIVE_DEFAULT_PER_MS } : undefined);
  if (handlerRate !== undefined) out.rate = handlerRate;
  if (value.concurrency !== undefined) out.concurrency = value.concurrency;
  if (value.perKey !== undefined) {
    const perKey: NonNullable<ResolvedLimits['perKey']> = { key: value.perKey.key };
    const keyRate = resolveRate(value.perKey.rate);
    if (keyRate !== undefined) perKey.rate = keyRate;
    if (value.perKey.concurrency !== undefined) perKey.concurrency = value.perKey.concurrency;
    out.perKey = perKey;
  }
  return out;
}
