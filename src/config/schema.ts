import { readFileSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import * as z from 'zod';
import { DEAD_LETTER_URL_HELP, isSharedSink, parseDeadLetterUrl } from '../dead-letter/index.js';
import { ALLOWED_HOSTS_HELP, splitAllowedHosts } from '../runtime/loopback-guard.js';
import { FORWARD_RATE_HELP, parseForwardRate } from '../forward/forward-limits.js';
import { parseDurationMs } from '../runtime/duration.js';
import { BREAKER_DEFAULTS, RETRY_DEFAULTS } from './failure-defaults.js';
import { flowLimitsOf } from './flow-defaults.js';
import type { WorkerConfig } from './types.js';

/**
 * THE schema of `durable-worker run`: defaults, ranges and cross-field rules, validated once at the
 * edge, so that the rest of the code takes the resolved type and checks nothing again. Input keys
 * are the camelCase option names (`baseUrl`, `visibility`...); values may be strings (env, flags) or
 * typed (config file, code). Output is exactly `WorkerConfig`.
 *
 * Issue messages omit the option name: load.ts prefixes the option as the user spelled it
 * (`--limit must be 1..100 (got 500)`). Issues with `params.standalone` are whole sentences; those
 * with `params.crossField` carry their own values.
 */

export interface SchemaContext {
  /** Relative paths (handlers, sqlite:, file:, secret file) resolve against this folder. */
  cwd: string;
  /** Default --worker-id-prefix. */
  hostname: string;
}

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** Spec (Limits): workerId is up to 200 characters. */
export const MAX_WORKER_ID_LENGTH = 200;

const DEFAULT_SHUTDOWN_TIMEOUT_SECONDS = 25;
const DEFAULT_IDEMPOTENCY = 'sqlite:.durable-worker/idempotency.sqlite';
const DEFAULT_DEAD_LETTER = 'file:.durable-worker/dead-letter.jsonl';
const DEFAULT_IDEMPOTENCY_TTL_MS = 7 * 86_400_000;

/** Issue message of a boolean option (a flag, env var or config value that is not true/false). */
export const BOOLEAN_MESSAGE = 'must be true or false (or 1/0)';

const requiredOr = (message: string) => (issue: { input?: unknown }) => (issue.input === undefined ? 'is required' : message);

function toNumber(value: unknown): unknown {
  return typeof value === 'string' && value.trim() !== '' ? Number(value.trim()) : value;
}

/** `true`/`false` (also 1/0, yes/no, any case) as a boolean; anything else is returned as is, for the schema to refuse. */
export function toBoolean(value: unknown): unknown {
  if (typeof value === 'number') return value === 1 ? true : value === 0 ? false : value;
  if (typeof value !== 'string') return value;
  const text = value.trim().toLowerCase();
  if (text === 'true' || text === '1' || text === 'yes') return true;
  if (text === 'false' || text === '0' || text === 'no') return false;
  return value;
}

function intRange(min: number, max: number) {
  const message = `must be an integer ${min}..${max}`;
  return z.preprocess(
    toNumber,
    z
      .number({ error: requiredOr(message) })
      .int({ error: message })
      .min(min, { error: `must be ${min}..${max}` })
      .max(max, { error: `must be ${min}..${max}` }),
  );
}

const text = (message = 'must be a non-empty string') =>
  z
    .string({ error: requiredOr(message) })
    .trim()
    .min(1, { error: message });

const httpUrl = text('must be an http(s) URL').transform((value, ctx) => {
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    url = undefined;
  }
  if (url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.hostname === '') {
    ctx.addIssue({ code: 'custom', message: 'must be an http(s) URL' });
    return z.NEVER;
  }
  return value.replace(/\/+$/, '');
});

function oneOf<const T extends readonly [string, ...string[]]>(values: T) {
  return z.preprocess(
    (v) => (typeof v === 'string' ? v.trim().toLowerCase() : v),
    z.enum(values, { error: requiredOr(`must be one of ${values.join(', ')}`) }),
  );
}

function duration(minMs: number, maxMs: number, help: string) {
  return z
    .unknown()
    .transform((value, ctx) => {
      const ms = parseDurationMs(value);
      if (ms === undefined || ms < minMs || ms > maxMs) {
        ctx.addIssue({ code: 'custom', message: `must be ${help}` });
        return z.NEVER;
      }
      return ms;
    })
    .optional();
}

const IDEMPOTENCY_HELP = 'must be memory, sqlite:PATH, redis://..., rediss://..., postgres://... or postgresql://...';

function isIdempotencyUrl(value: string): boolean {
  if (value === 'memory') return true;
  if (value.startsWith('sqlite:')) return value.length > 'sqlite:'.length;
  if (!/^(redis|rediss|postgres|postgresql):\/\//.test(value)) return false;
  try {
    return new URL(value).hostname !== '' || /^postgres(ql)?:\/\/\//.test(value); // postgres:///db = local socket
  } catch {
    return false;
  }
}

function isDeadLetterUrl(value: string): boolean {
  try {
    parseDeadLetterUrl(value, '/');
    return true;
  } catch {
    return false;
  }
}

/**
 * `--dead-letter` with relative paths made absolute. Unset, it follows a shared idempotency store
 * (redis://, postgres://): the replicas that share one need their dead letters in one place that
 * outlives a pod, and that server is the one they all reach. Otherwise the local file, as before.
 */
export function resolveDeadLetterUrl(cwd: string, deadLetter: string | undefined, idempotencyUrl: string): string {
  if (deadLetter === undefined) {
    let shared = false;
    try {
      shared = isSharedSink(parseDeadLetterUrl(idempotencyUrl, cwd));
    } catch {
      // memory: not a sink URL, not shared
    }
    return shared ? idempotencyUrl : `file:${resolvePath(cwd, DEFAULT_DEAD_LETTER.slice('file:'.length))}`;
  }
  const location = parseDeadLetterUrl(deadLetter, cwd);
  return location.kind === 'file' || location.kind === 'sqlite' ? `${location.kind}:${location.path}` : location.url;
}

function resolvePath(cwd: string, path: string): string {
  return isAbsolute(path) ? path : resolve(cwd, path);
}

/** Absolute path inside `sqlite:PATH`; `sqlite::memory:` stays as is. Other store URLs unchanged. */
export function resolveStoreUrl(cwd: string, url: string): string {
  if (!url.startsWith('sqlite:')) return url;
  const path = url.slice('sqlite:'.length);
  return path === ':memory:' ? url : `sqlite:${resolvePath(cwd, path)}`;
}

function describeFsError(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : err instanceof Error ? err.message : String(err);
}

/** The one schema, bound to a working directory and hostname (for relative paths and defaults). */
export function createWorkerConfigSchema(context: SchemaContext) {
  return z
    .object({
      baseUrl: httpUrl,
      authUrl: httpUrl.optional(),
      destination: text(),
      tenant: text().optional(),
      clientId: text().optional(),
      clientSecret: z.string({ error: 'must be a string' }).min(1, { error: 'must not be empty' }).optional(),
      clientSecretFile: text('must be a file path').optional(),
      apiKey: z.string({ error: 'must be a string' }).min(1, { error: 'must not be empty' }).optional(),
      handlers: text('must be a folder path').default('./handlers'),
      forwardUrl: httpUrl.optional(),
      forwardMode: oneOf(['binary', 'structured'] as const).default('binary'),
      forwardRate: text(FORWARD_RATE_HELP)
        .refine((v) => parseForwardRate(v) !== undefined, { error: `must be ${FORWARD_RATE_HELP}` })
        .optional(),
      forwardConcurrency: intRange(1, 100_000).optional(),
      handlerTimeout: duration(1, 600_000, 'seconds or a duration like 500ms, 30s, 5m, at most 10m'),
      workers: intRange(1, 256).default(1),
      workerIdPrefix: text()
        .refine((v) => !/[\s\u0000-\u001f]/.test(v), { error: 'must not contain whitespace or control characters' })
        .optional(),
      limit: intRange(1, 100).default(20),
      visibility: intRange(1, 600).default(60),
      concurrency: intRange(1, 1000).default(8),
      maxInProgress: intRange(1, 100_000).optional(),
      maxLeases: intRange(1, 1000).optional(),
      maxAttempts: intRange(1, 1000).default(5),
      retryBackoffMin: duration(0, 3_600_000, 'a duration like 500ms, 1s, 2m (0..1h)'),
      retryBackoffMax: duration(0, 86_400_000, 'a duration like 30s, 5m, 1h (0..24h)'),
      breaker: z.preprocess(toBoolean, z.boolean({ error: BOOLEAN_MESSAGE })).default(BREAKER_DEFAULTS.breaker),
      breakerFailureRatio: z
        .preprocess(
          toNumber,
          z
            .number({ error: 'must be a number above 0 and at most 1' })
            .gt(0, { error: 'must be above 0 and at most 1' })
            .max(1, { error: 'must be above 0 and at most 1' }),
        )
        .default(BREAKER_DEFAULTS.breakerFailureRatio),
      breakerWindow: intRange(2, 10_000).default(BREAKER_DEFAULTS.breakerWindow),
      breakerWindowTime: duration(1_000, 3_600_000, 'a duration like 10s, 1m (1s..1h)'),
      breakerCooldown: duration(100, 3_600_000, 'a duration like 500ms, 3s, 1m (100ms..1h)'),
      isolation: oneOf(['thread', 'none'] as const).default('thread'),
      idempotency: text(IDEMPOTENCY_HELP).refine(isIdempotencyUrl, { error: IDEMPOTENCY_HELP }).default(DEFAULT_IDEMPOTENCY),
      idempotencyPrefix: text().optional(),
      idempotencyTtl: duration(1_000, 3_650 * 86_400_000, 'seconds or a duration like 12h, 7d (1s..3650d)'),
      deadLetter: text(DEAD_LETTER_URL_HELP).refine(isDeadLetterUrl, { error: DEAD_LETTER_URL_HELP }).optional(),
      metricsPort: intRange(0, 65535).default(9464),
      metricsHost: text().default('0.0.0.0'),
      allowedHosts: z
        .unknown()
        .transform((value, ctx) => {
          const result = splitAllowedHosts(value);
          if ('names' in result) return result.names;
          ctx.addIssue({ code: 'custom', message: ALLOWED_HOSTS_HELP });
          return z.NEVER;
        })
        .optional(),
      logLevel: oneOf(LOG_LEVELS).default('info'),
      exitWhenIdle: z.preprocess(toBoolean, z.boolean({ error: BOOLEAN_MESSAGE })).default(false),
      otel: z.preprocess(toBoolean, z.boolean({ error: BOOLEAN_MESSAGE })).default(false),
      shutdownTimeout: duration(0, 600_000, 'seconds or a duration like 25s, 1m (0..10m)'),
    })
    .strict()
    .transform((input, ctx): WorkerConfig => {
      const standalone = (message: string) => ctx.addIssue({ code: 'custom', message, params: { standalone: true } });
      // Cross-field messages say what they need; load.ts adds no "(got ...)" to them.
      const issue = (key: string, message: string) => ctx.addIssue({ code: 'custom', message, path: [key], params: { crossField: true } });

      // Credentials: client credentials (id + secret + tenant audience) or an API key, never half of each.
      const hasClientCredential = input.clientId !== undefined || input.clientSecret !== undefined || input.clientSecretFile !== undefined;
      if (input.clientSecret !== undefined && input.clientSecretFile !== undefined) {
        standalone('use either --client-secret or --client-secret-file, not both');
      } else if (hasClientCredential && input.apiKey !== undefined) {
        standalone('use either --api-key or client credentials (--client-id, --client-secret), not both');
      } else if (!hasClientCredential && input.apiKey === undefined) {
        standalone('credentials are required: --client-id with --client-secret (or --client-secret-file) and --tenant, or --api-key');
      } else if (hasClientCredential) {
        if (input.clientId === undefined) issue('clientId', 'is required with --client-secret');
        else if (input.clientSecret === undefined && input.clientSecretFile === undefined)
          issue('clientSecret', 'is required with --client-id (or use --client-secret-file)');
        else if (input.tenant === undefined) issue('tenant', 'is required with client credentials (it is the token audience)');
      }

      let clientSecret = input.clientSecret;
      if (input.clientSecretFile !== undefined) {
        const path = resolvePath(context.cwd, input.clientSecretFile);
        try {
          // A trailing newline is an artefact of how secret files are written (echo, k8s secrets).
          clientSecret = readFileSync(path, 'utf8').replace(/\r?\n$/, '');
          if (clientSecret === '') issue('clientSecretFile', `: ${path} is empty`);
        } catch (err) {
          issue('clientSecretFile', `: cannot read ${path} (${describeFsError(err)})`);
        }
      }

      // Unset, the drain budget shrinks with --visibility. Any value is safe: every lease in flight
      // still aborts at its own deadline (lease expiry minus a safety margin, worker/held-lease.ts) and is
      // acked `failed` before its lease expires, so a drain ends at the latest when the leases of the
      // leases in flight run out; a longer timeout only lets the process wait for them.
      const shutdownTimeoutSeconds =
        input.shutdownTimeout !== undefined ? input.shutdownTimeout / 1_000 : Math.min(DEFAULT_SHUTDOWN_TIMEOUT_SECONDS, Math.floor(input.visibility / 2));

      const retryBackoffMinMs = input.retryBackoffMin ?? RETRY_DEFAULTS.retryBackoffMinMs;
      const retryBackoffMaxMs = input.retryBackoffMax ?? Math.max(retryBackoffMinMs, RETRY_DEFAULTS.retryBackoffMaxMs);
      if (retryBackoffMaxMs < retryBackoffMinMs)
        issue('retryBackoffMax', `must be at least --retry-backoff-min (${retryBackoffMinMs} ms; got ${retryBackoffMaxMs} ms)`);

      const flow = flowLimitsOf(input);
      if (flow.maxLeases < input.workers)
        issue('maxLeases', `must be at least --workers (${input.workers}), the leases the process keeps in flight while there is work (got ${flow.maxLeases})`);
      // Spec (Limits): workerId up to 200 characters; ids are `<prefix>-<index>`, index 0..max-leases - 1.
      const indexSuffixLength = `-${flow.maxLeases - 1}`.length;
      let workerIdPrefix = input.workerIdPrefix;
      if (workerIdPrefix === undefined) {
        workerIdPrefix = (context.hostname.trim() || 'durable-worker').slice(0, MAX_WORKER_ID_LENGTH - indexSuffixLength);
      } else if (workerIdPrefix.length + indexSuffixLength > MAX_WORKER_ID_LENGTH) {
        issue(
          'workerIdPrefix',
          `must leave room for the worker index: <prefix>-${flow.maxLeases - 1} must be at most ${MAX_WORKER_ID_LENGTH} characters (prefix has ${workerIdPrefix.length})`,
        );
      }

      const config: WorkerConfig = {
        baseUrl: input.baseUrl,
        authUrl: input.authUrl ?? input.baseUrl,
        destination: input.destination,
        handlersDir: resolvePath(context.cwd, input.handlers),
        workers: input.workers,
        workerIdPrefix,
        limit: input.limit,
        visibilitySeconds: input.visibility,
        concurrency: input.concurrency,
        maxInProgress: flow.maxInProgress,
        maxLeases: flow.maxLeases,
        maxAttempts: input.maxAttempts,
        retryBackoffMinMs,
        retryBackoffMaxMs,
        breaker: input.breaker,
        breakerFailureRatio: input.breakerFailureRatio,
        breakerWindow: input.breakerWindow,
        breakerWindowTimeMs: input.breakerWindowTime ?? BREAKER_DEFAULTS.breakerWindowTimeMs,
        breakerCooldownMs: input.breakerCooldown ?? BREAKER_DEFAULTS.breakerCooldownMs,
        idempotencyUrl: resolveStoreUrl(context.cwd, input.idempotency),
        idempotencyPrefix: input.idempotencyPrefix ?? (input.tenant !== undefined ? `${input.tenant}:${input.destination}` : input.destination),
        idempotencyTtlMs: input.idempotencyTtl ?? DEFAULT_IDEMPOTENCY_TTL_MS,
        deadLetterUrl: resolveDeadLetterUrl(context.cwd, input.deadLetter, input.idempotency),
        metricsPort: input.metricsPort,
        metricsHost: input.metricsHost,
        ...(input.allowedHosts === undefined ? {} : { allowedHosts: input.allowedHosts }),
        exitWhenIdle: input.exitWhenIdle,
        logLevel: input.logLevel,
        otel: input.otel,
        isolation: input.isolation,
        shutdownTimeoutSeconds,
        forwardMode: input.forwardMode,
      };
      if (input.tenant !== undefined) config.tenant = input.tenant;
      if (input.clientId !== undefined) config.clientId = input.clientId;
      if (clientSecret !== undefined) config.clientSecret = clientSecret;
      if (input.apiKey !== undefined) config.apiKey = input.apiKey;
      if (input.forwardUrl !== undefined) config.forwardUrl = input.forwardUrl;
      if (input.forwardRate !== undefined) config.forwardRate = input.forwardRate;
      if (input.forwardConcurrency !== undefined) config.forwardConcurrency = input.forwardConcurrency;
      if (input.handlerTimeout !== undefined) config.handlerTimeoutMs = input.handlerTimeout;
      return config;
    });
}

export type WorkerConfigSchema = ReturnType<typeof createWorkerConfigSchema>;
