import * as z from 'zod';

/**
 * Route families a fault can be restricted to. `*` = every public route; the loopback seeding
 * endpoints under `/_emulator` are never faulted (tests must be able to turn faults off).
 */
export const ROUTE_FAMILIES = ['pull', 'ack', 'ingest', 'token', 'read', 'other', '*'] as const;
export type RouteFamily = (typeof ROUTE_FAMILIES)[number];

const routes = z.array(z.enum(ROUTE_FAMILIES)).min(1);
const rate = z.number().min(0).max(1);

export const faultOptionsSchema = z
  .object({
    /** PRNG seed, so a run replays the same faults for the same request order. Default 1. */
    seed: z.number().int().optional(),
    /** Families every fault below applies to unless it names its own. Default `['*']`. */
    routes: routes.optional(),
    /** Added delay before answering, in ms. Default 0. */
    latencyMs: z.number().min(0).max(60_000).optional(),
    /** Uniform extra delay 0..latencyJitterMs. Default 0. */
    latencyJitterMs: z.number().min(0).max(60_000).optional(),
    latencyRoutes: routes.optional(),
    /** Fraction of requests answered with a 5xx problem instead of being served. Default 0. */
    errorRate: rate.optional(),
    /** Status of injected errors: 503 (default) or 500. */
    errorStatus: z.union([z.literal(500), z.literal(503)]).optional(),
    errorRoutes: routes.optional(),
    /** Bursts of 429: with probability `rate` a request starts a burst of `burst` throttled requests. */
    throttle: z
      .object({
        rate,
        /** Retry-After in seconds (spec: integer seconds, minimum 1). Default 1. */
        retryAfterSeconds: z.number().int().min(1).max(3600).optional(),
        /** Consecutive throttled requests per burst. Default 1. */
        burst: z.number().int().min(1).max(10_000).optional(),
        routes: routes.optional(),
      })
      .strict()
      .optional(),
    /** Fraction of requests whose socket is destroyed without an answer. Default 0. */
    dropRate: rate.optional(),
    dropRoutes: routes.optional(),
  })
  .strict();

/** Fault injection settings (all optional; an empty object means no faults). */
export type FaultOptions = z.input<typeof faultOptionsSchema>;
