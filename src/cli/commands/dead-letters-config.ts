import { loadWorkerConfig, collectRunOptions } from '../../config/load.js';
import { parseDurationMs } from '../../runtime/duration.js';
import type { WorkerConfig } from '../../config/types.js';
import { isSharedSink, parseDeadLetterUrl } from '../../dead-letter/index.js';
import type { DeadLetterFilter } from '../../dead-letter/query.js';
import { DEAD_LETTER_REASONS, DEAD_LETTER_STATES, type DeadLetterReason, type DeadLetterState } from '../../dead-letter/sink.js';
import { ConfigError } from '../../errors.js';
import { validatePattern } from '../../runtime/type-pattern.js';
import type { CliContext } from '../context.js';
import { pickRunFlags } from '../run-options.js';

/** What `dead-letters` needs of the worker's configuration (the same sources as `run`). */
export interface DeadLetterCommandConfig {
  config: WorkerConfig;
  /** The records' `--idempotency-prefix`: given, or derived from `--destination`; undefined = every prefix. */
  prefix: string | undefined;
  /** Where a replay claims its keys: `--idempotency` when set, else a shared sink's own server. */
  replayIdempotencyUrl: string;
}

/** Options `dead-letters` has no use for: no platform call is made. */
const UNUSED = ['clientId', 'clientSecret', 'clientSecretFile', 'apiKey', 'baseUrl', 'authUrl'] as const;

/**
 * The worker's configuration as `run` reads it (flags, DURABLE_WORKER_*, --config, defaults, one
 * schema), without what only a platform connection needs: an operator may point the command at the
 * very config file of the worker. Throws ConfigError (exit 2) naming the option.
 */
export function loadDeadLetterConfig(argv: Record<string, unknown>, context: CliContext): DeadLetterCommandConfig {
  const flags = pickRunFlags(argv);
  const base = { flags, env: context.env, cwd: context.cwd, omit: UNUSED };
  const given = collectRunOptions(base).values;
  // Stand-ins for what `run` requires and a dead-letter command does not.
  const defaults: Record<string, unknown> = { baseUrl: 'http://127.0.0.1', apiKey: 'unused' };
  if (given.destination === undefined) defaults.destination = 'unused';
  const config = loadWorkerConfig({ ...base, defaults });
  const prefix = given.idempotencyPrefix !== undefined || given.destination !== undefined ? config.idempotencyPrefix : undefined;
  const shared = isSharedSink(parseDeadLetterUrl(config.deadLetterUrl, context.cwd));
  const replayIdempotencyUrl = given.idempotency === undefined && shared ? config.deadLetterUrl : config.idempotencyUrl;
  return { config, prefix, replayIdempotencyUrl };
}

function oneOf<T extends string>(option: string, values: readonly T[], value: unknown): T | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'string' && (values as readonly string[]).includes(value)) return value as T;
  throw new ConfigError(`${option} must be one of ${values.join(', ')} (got ${String(value)})`, option);
}

/** An ISO time, or a duration ago (`2h`: two hours ago). */
export function parseTime(option: string, value: unknown, now: number = Date.now()): Date | undefined {
  if (value === undefined) return undefined;
  const text = String(value).trim();
  const ago = /^\d/.test(text) && !/[-:T]/.test(text) ? parseDurationMs(text) : undefined;
  if (ago !== undefined) return new Date(now - ago);
  const ms = Date.parse(text);
  if (!Number.isFinite(ms))
    throw new ConfigError(`${option} must be an ISO time (2026-01-31T12:00:00Z) or a duration ago like 30m, 2h, 7d (got ${text})`, option);
  return new Date(ms);
}

export function parseDuration(option: string, value: unknown): number | undefined {
  if (value === undefined) return undefined;
  const ms = parseDurationMs(value);
  if (ms === undefined) throw new ConfigError(`${option} must be a duration like 30m, 12h, 7d (got ${String(value)})`, option);
  return ms;
}

/** `--handler`, `--type`, `--reason`, `--state`, `--since`, `--until`: each given one must match. */
export function parseFilter(argv: Record<string, unknown>): DeadLetterFilter {
  const filter: DeadLetterFilter = {};
  if (argv.handler !== undefined) filter.handler = String(argv.handler);
  if (argv.type !== undefined) {
    const problem = validatePattern(argv.type);
    if (problem !== undefined) throw new ConfigError(`--type ${problem} (got ${String(argv.type)})`, '--type');
    filter.type = String(argv.type);
  }
  const reason = oneOf<DeadLetterReason>('--reason', DEAD_LETTER_REASONS, argv.reason);
  if (reason !== undefined) filter.reason = reason;
  // `all`, as the console offers it: no filter on the state.
  const state = oneOf<DeadLetterState | 'all'>('--state', [...DEAD_LETTER_STATES, 'all'], argv.state);
  if (state !== undefined && state !== 'all') filter.state = state;
  const since = parseTime('--since', argv.since);
  if (since !== undefined) filter.since = since;
  const until = parseTime('--until', argv.until);
  if (until !== undefined) filter.until = until;
  if (since !== undefined && until !== undefined && since >= until) throw new ConfigError('--since must be before --until', '--since');
  return filter;
}

export function hasFilter(filter: DeadLetterFilter): boolean {
  return Object.values(filter).some((value) => value !== undefined);
}
