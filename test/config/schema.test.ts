import { FORWARD_RATE_HELP } from '../../src/forward/forward-limits.js';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadWorkerConfig } from '../../src/config/load.js';
import { RUN_OPTION_KEYS, envName, type RunOptionKey } from '../../src/config/options.js';
import type { WorkerConfig } from '../../src/config/types.js';

/**
 * Every `run` option through the one schema (src/config/schema.ts) as a user reaches it: its env
 * variable. One row per option: the env name is read (a value lands in the resolved WorkerConfig),
 * the default when unset, values just inside its bounds, values just outside with the one-line
 * message naming the option (src/config/load.ts builds it). A new option without a row fails the
 * coverage test by name.
 */

const cwd = mkdtempSync(join(tmpdir(), 'dw-schema-'));
const secretFile = join(cwd, 'secret.txt');
writeFileSync(secretFile, 'from-file\n');

/** Client credentials; an option's own row leaves its key out of this base (`base`). */
const CLIENT_BASE: Partial<Record<RunOptionKey, string>> = {
  baseUrl: 'http://api.test',
  destination: 'dest-1',
  tenant: 't1',
  clientId: 'c1',
  clientSecret: 's1',
};

type Expected = Partial<WorkerConfig> | { error: string };

interface Row {
  /** Another base than CLIENT_BASE (the credential options). */
  base?: Partial<Record<RunOptionKey, string>>;
  /** An env value other than the default, and what it resolves to. */
  set: [string, Partial<WorkerConfig>];
  /** What the WorkerConfig holds when the option is unset (or the message when it is required). */
  unset: Expected;
  /** Values just inside the bounds and what they resolve to. */
  inside?: [string, Partial<WorkerConfig>][];
  /** Values just outside the bounds with their message; `none` says why no env value is invalid. */
  outside: [string, string][] | { none: string };
}

const from = (key: RunOptionKey) => `--${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)} (from ${envName(key)})`;
const anyText = { none: 'any non-empty text is valid; an empty variable counts as unset' };
const DURATION_HELP = 'seconds or a duration like 500ms, 30s, 5m, at most 10m';

const ROWS: Record<RunOptionKey, Row> = {
  baseUrl: {
    set: ['http://other.test/', { baseUrl: 'http://other.test', authUrl: 'http://other.test' }],
    unset: { error: '--base-url is required' },
    inside: [['https://h', { baseUrl: 'https://h' }]],
    outside: [['ftp://h', `${from('baseUrl')} must be an http(s) URL (got ftp://h)`]],
  },
  authUrl: {
    set: ['http://auth.test', { authUrl: 'http://auth.test', baseUrl: 'http://api.test' }],
    unset: { authUrl: 'http://api.test' },
    outside: [['mailto:x', `${from('authUrl')} must be an http(s) URL (got mailto:x)`]],
  },
  destination: { set: ['d2', { destination: 'd2', idempotencyPrefix: 't1:d2' }], unset: { error: '--destination is required' }, outside: anyText },
  tenant: {
    set: ['t2', { tenant: 't2', idempotencyPrefix: 't2:dest-1' }],
    unset: { error: '--tenant is required with client credentials (it is the token audience)' },
    outside: anyText,
  },
  clientId: { set: ['c2', { clientId: 'c2' }], unset: { error: '--client-id is required with --client-secret' }, outside: anyText },
  clientSecret: {
    set: ['s2', { clientSecret: 's2' }],
    unset: { error: '--client-secret is required with --client-id (or use --client-secret-file)' },
    outside: anyText,
  },
  clientSecretFile: {
    base: { baseUrl: 'http://api.test', destination: 'dest-1', tenant: 't1', clientId: 'c1' },
    set: [secretFile, { clientSecret: 'from-file' }],
    unset: { error: '--client-secret is required with --client-id (or use --client-secret-file)' },
    outside: [[join(cwd, 'missing.txt'), `${from('clientSecretFile')}: cannot read ${join(cwd, 'missing.txt')} (ENOENT)`]],
  },
  apiKey: {
    base: { baseUrl: 'http://api.test', destination: 'dest-1' },
    set: ['k2', { apiKey: 'k2', idempotencyPrefix: 'dest-1' }],
    unset: { error: 'credentials are required: --client-id with --client-secret (or --client-secret-file) and --tenant, or --api-key' },
    outside: anyText,
  },
  handlers: { set: ['my-handlers', { handlersDir: join(cwd, 'my-handlers') }], unset: { handlersDir: join(cwd, 'handlers') }, outside: anyText },
  forwardUrl: {
    set: ['http://app:3000/events/', { forwardUrl: 'http://app:3000/events' }],
    unset: { forwardUrl: undefined },
    outside: [['file:///x', `${from('forwardUrl')} must be an http(s) URL (got file:///x)`]],
  },
  forwardMode: {
    set: ['structured', { forwardMode: 'structured' }],
    unset: { forwardMode: 'binary' },
    outside: [['json', `${from('forwardMode')} must be one of binary, structured (got json)`]],
  },
  forwardRate: {
    set: ['40/1s', { forwardRate: '40/1s' }],
    unset: { forwardRate: undefined },
    inside: [
      ['adaptive', { forwardRate: 'adaptive' }],
      ['adaptive:600/m', { forwardRate: 'adaptive:600/m' }],
    ],
    outside: [
      ['40 a second', `${from('forwardRate')} must be ${FORWARD_RATE_HELP} (got 40 a second)`],
      ['0/1s', `${from('forwardRate')} must be ${FORWARD_RATE_HELP} (got 0/1s)`],
    ],
  },
  forwardConcurrency: {
    set: ['8', { forwardConcurrency: 8 }],
    unset: { forwardConcurrency: undefined },
    outside: [['0', `${from('forwardConcurrency')} must be 1..100000 (got 0)`]],
  },
  handlerTimeout: {
    set: ['30s', { handlerTimeoutMs: 30_000 }],
    unset: { handlerTimeoutMs: undefined },
    inside: [
      ['1ms', { handlerTimeoutMs: 1 }],
      ['10m', { handlerTimeoutMs: 600_000 }],
    ],
    outside: [
      ['0', `${from('handlerTimeout')} must be ${DURATION_HELP} (got 0)`],
      ['601s', `${from('handlerTimeout')} must be ${DURATION_HELP} (got 601s)`],
    ],
  },
  workers: {
    set: ['3', { workers: 3, maxInProgress: 24 }],
    unset: { workers: 1 },
    inside: [
      ['1', { workers: 1 }],
      ['256', { workers: 256, maxLeases: 256 }],
    ],
    outside: [
      ['0', `${from('workers')} must be 1..256 (got 0)`],
      ['257', `${from('workers')} must be 1..256 (got 257)`],
    ],
  },
  workerIdPrefix: {
    set: ['wp', { workerIdPrefix: 'wp' }],
    unset: { workerIdPrefix: 'host-a' },
    // workerIds are <prefix>-<index> up to 200 characters; the default 32 leases end at index 31.
    inside: [['a'.repeat(197), { workerIdPrefix: 'a'.repeat(197) }]],
    outside: [['a'.repeat(198), `${from('workerIdPrefix')} must leave room for the worker index: <prefix>-31 must be at most 200 characters (prefix has 198)`]],
  },
  limit: {
    set: ['50', { limit: 50 }],
    unset: { limit: 20 },
    inside: [
      ['1', { limit: 1 }],
      ['100', { limit: 100 }],
    ],
    outside: [
      ['0', `${from('limit')} must be 1..100 (got 0)`],
      ['101', `${from('limit')} must be 1..100 (got 101)`],
    ],
  },
  visibility: {
    set: ['120', { visibilitySeconds: 120 }],
    unset: { visibilitySeconds: 60 },
    inside: [
      ['1', { visibilitySeconds: 1 }],
      ['600', { visibilitySeconds: 600 }],
    ],
    outside: [
      ['0', `${from('visibility')} must be 1..600 (got 0)`],
      ['601', `${from('visibility')} must be 1..600 (got 601)`],
    ],
  },
  concurrency: {
    set: ['16', { concurrency: 16, maxInProgress: 16 }],
    unset: { concurrency: 8 },
    inside: [
      ['1', { concurrency: 1 }],
      ['1000', { concurrency: 1000 }],
    ],
    outside: [
      ['0', `${from('concurrency')} must be 1..1000 (got 0)`],
      ['1001', `${from('concurrency')} must be 1..1000 (got 1001)`],
      ['1.5', `${from('concurrency')} must be an integer 1..1000 (got 1.5)`],
    ],
  },
  maxInProgress: {
    set: ['5', { maxInProgress: 5 }],
    unset: { maxInProgress: 8 },
    inside: [
      ['1', { maxInProgress: 1 }],
      ['100000', { maxInProgress: 100_000 }],
    ],
    outside: [
      ['0', `${from('maxInProgress')} must be 1..100000 (got 0)`],
      ['100001', `${from('maxInProgress')} must be 1..100000 (got 100001)`],
    ],
  },
  maxLeases: {
    set: ['3', { maxLeases: 3 }],
    unset: { maxLeases: 32 },
    inside: [
      ['1', { maxLeases: 1 }],
      ['1000', { maxLeases: 1000 }],
    ],
    outside: [
      ['0', `${from('maxLeases')} must be 1..1000 (got 0)`],
      ['1001', `${from('maxLeases')} must be 1..1000 (got 1001)`],
    ],
  },
  maxAttempts: {
    set: ['7', { maxAttempts: 7 }],
    unset: { maxAttempts: 5 },
    inside: [
      ['1', { maxAttempts: 1 }],
      ['1000', { maxAttempts: 1000 }],
    ],
    outside: [
      ['0', `${from('maxAttempts')} must be 1..1000 (got 0)`],
      ['1001', `${from('maxAttempts')} must be 1..1000 (got 1001)`],
    ],
  },
  retryBackoffMin: {
    set: ['500ms', { retryBackoffMinMs: 500 }],
    unset: { retryBackoffMinMs: 1_000, retryBackoffMaxMs: 60_000 },
    inside: [
      ['0', { retryBackoffMinMs: 0 }],
      ['1h', { retryBackoffMinMs: 3_600_000, retryBackoffMaxMs: 3_600_000 }],
    ],
    outside: [['61m', `${from('retryBackoffMin')} must be a duration like 500ms, 1s, 2m (0..1h) (got 61m)`]],
  },
  retryBackoffMax: {
    set: ['5m', { retryBackoffMaxMs: 300_000 }],
    unset: { retryBackoffMaxMs: 60_000 },
    inside: [
      ['1s', { retryBackoffMaxMs: 1_000 }],
      ['24h', { retryBackoffMaxMs: 86_400_000 }],
    ],
    outside: [
      ['25h', `${from('retryBackoffMax')} must be a duration like 30s, 5m, 1h (0..24h) (got 25h)`],
      ['999ms', `${from('retryBackoffMax')} must be at least --retry-backoff-min (1000 ms; got 999 ms)`],
    ],
  },
  breaker: {
    set: ['false', { breaker: false }],
    unset: { breaker: true },
    inside: [
      ['0', { breaker: false }],
      ['yes', { breaker: true }],
    ],
    outside: [['maybe', `${from('breaker')} must be true or false (or 1/0) (got maybe)`]],
  },
  breakerFailureRatio: {
    set: ['0.25', { breakerFailureRatio: 0.25 }],
    unset: { breakerFailureRatio: 0.5 },
    inside: [
      ['0.001', { breakerFailureRatio: 0.001 }],
      ['1', { breakerFailureRatio: 1 }],
    ],
    outside: [
      ['0', `${from('breakerFailureRatio')} must be above 0 and at most 1 (got 0)`],
      ['1.01', `${from('breakerFailureRatio')} must be above 0 and at most 1 (got 1.01)`],
    ],
  },
  breakerWindow: {
    set: ['10', { breakerWindow: 10 }],
    unset: { breakerWindow: 20 },
    inside: [
      ['2', { breakerWindow: 2 }],
      ['10000', { breakerWindow: 10_000 }],
    ],
    outside: [
      ['1', `${from('breakerWindow')} must be 2..10000 (got 1)`],
      ['10001', `${from('breakerWindow')} must be 2..10000 (got 10001)`],
    ],
  },
  breakerWindowTime: {
    set: ['30s', { breakerWindowTimeMs: 30_000 }],
    unset: { breakerWindowTimeMs: 10_000 },
    inside: [
      ['1s', { breakerWindowTimeMs: 1_000 }],
      ['1h', { breakerWindowTimeMs: 3_600_000 }],
    ],
    outside: [['999ms', `${from('breakerWindowTime')} must be a duration like 10s, 1m (1s..1h) (got 999ms)`]],
  },
  breakerCooldown: {
    set: ['5s', { breakerCooldownMs: 5_000 }],
    unset: { breakerCooldownMs: 3_000 },
    inside: [
      ['100ms', { breakerCooldownMs: 100 }],
      ['1h', { breakerCooldownMs: 3_600_000 }],
    ],
    outside: [
      ['99ms', `${from('breakerCooldown')} must be a duration like 500ms, 3s, 1m (100ms..1h) (got 99ms)`],
      ['61m', `${from('breakerCooldown')} must be a duration like 500ms, 3s, 1m (100ms..1h) (got 61m)`],
    ],
  },
  isolation: {
    set: ['none', { isolation: 'none' }],
    unset: { isolation: 'thread' },
    outside: [['process', `${from('isolation')} must be one of thread, none (got process)`]],
  },
  idempotency: {
    set: ['memory', { idempotencyUrl: 'memory' }],
    unset: { idempotencyUrl: `sqlite:${join(cwd, '.durable-worker/idempotency.sqlite')}` },
    inside: [['sqlite:x.db', { idempotencyUrl: `sqlite:${join(cwd, 'x.db')}` }]],
    outside: [
      ['sqlite:', `${from('idempotency')} must be memory, sqlite:PATH, redis://..., rediss://..., postgres://... or postgresql://... (got sqlite:)`],
      ['mysql://h', `${from('idempotency')} must be memory, sqlite:PATH, redis://..., rediss://..., postgres://... or postgresql://... (got mysql://h)`],
    ],
  },
  idempotencyPrefix: { set: ['p', { idempotencyPrefix: 'p' }], unset: { idempotencyPrefix: 't1:dest-1' }, outside: anyText },
  idempotencyTtl: {
    set: ['12h', { idempotencyTtlMs: 43_200_000 }],
    unset: { idempotencyTtlMs: 7 * 86_400_000 },
    inside: [
      ['1s', { idempotencyTtlMs: 1_000 }],
      ['3650d', { idempotencyTtlMs: 3_650 * 86_400_000 }],
    ],
    outside: [
      ['999ms', `${from('idempotencyTtl')} must be seconds or a duration like 12h, 7d (1s..3650d) (got 999ms)`],
      ['3651d', `${from('idempotencyTtl')} must be seconds or a duration like 12h, 7d (1s..3650d) (got 3651d)`],
    ],
  },
  deadLetter: {
    set: ['sqlite:dl.sqlite', { deadLetterUrl: `sqlite:${join(cwd, 'dl.sqlite')}` }],
    unset: { deadLetterUrl: `file:${join(cwd, '.durable-worker/dead-letter.jsonl')}` },
    outside: [['s3://bucket', `${from('deadLetter')} must be file:PATH, sqlite:PATH, redis://... or postgres://... (got s3://bucket)`]],
  },
  metricsPort: {
    set: ['9100', { metricsPort: 9100 }],
    unset: { metricsPort: 9464 },
    inside: [
      ['0', { metricsPort: 0 }],
      ['65535', { metricsPort: 65_535 }],
    ],
    outside: [['65536', `${from('metricsPort')} must be 0..65535 (got 65536)`]],
  },
  allowedHosts: {
    set: ['emulator, .dev.example', { allowedHosts: ['emulator', '.dev.example'] }],
    unset: { allowedHosts: undefined },
    outside: [
      [
        'http://emulator',
        `${from('allowedHosts')} must be host names without scheme or port, separated by commas, e.g. emulator,.dev.example (got http://emulator)`,
      ],
    ],
  },
  metricsHost: { set: ['127.0.0.1', { metricsHost: '127.0.0.1' }], unset: { metricsHost: '0.0.0.0' }, outside: anyText },
  logLevel: {
    set: ['debug', { logLevel: 'debug' }],
    unset: { logLevel: 'info' },
    outside: [['loud', `${from('logLevel')} must be one of fatal, error, warn, info, debug, trace, silent (got loud)`]],
  },
  otel: { set: ['true', { otel: true }], unset: { otel: false }, outside: [['maybe', `${from('otel')} must be true or false (or 1/0) (got maybe)`]] },
  exitWhenIdle: {
    set: ['1', { exitWhenIdle: true }],
    unset: { exitWhenIdle: false },
    outside: [['maybe', `${from('exitWhenIdle')} must be true or false (or 1/0) (got maybe)`]],
  },
  shutdownTimeout: {
    set: ['45', { shutdownTimeoutSeconds: 45 }],
    // At the default --visibility of 60: the lesser of 25 and half the visibility.
    unset: { shutdownTimeoutSeconds: 25 },
    // Seconds, or a duration as every other duration option takes it.
    inside: [
      ['0', { shutdownTimeoutSeconds: 0 }],
      ['1m', { shutdownTimeoutSeconds: 60 }],
      ['1500ms', { shutdownTimeoutSeconds: 1.5 }],
      ['600', { shutdownTimeoutSeconds: 600 }],
    ],
    outside: [
      ['-1', `${from('shutdownTimeout')} must be seconds or a duration like 25s, 1m (0..10m) (got -1)`],
      ['601', `${from('shutdownTimeout')} must be seconds or a duration like 25s, 1m (0..10m) (got 601)`],
    ],
  },
};

function envOf(key: RunOptionKey, value: string | undefined): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(ROWS[key].base ?? CLIENT_BASE)) if (k !== key) env[envName(k)] = v;
  if (value !== undefined) env[envName(key)] = value;
  return env;
}

const load = (key: RunOptionKey, value: string | undefined): WorkerConfig => loadWorkerConfig({ env: envOf(key, value), cwd, hostname: 'host-a' });

/** The config with each key `expected` names as undefined present (an unset optional is absent). */
function absentAsUndefined(config: WorkerConfig, expected: Partial<WorkerConfig>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...config };
  for (const k of Object.keys(expected)) if (!(k in out)) out[k] = undefined;
  return out;
}

function messageOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('expected a configuration error');
}

describe('the run options schema', () => {
  it('has a row for every run option', () => {
    const missing = RUN_OPTION_KEYS.filter((key) => !(key in ROWS));
    expect(missing, `run options without a row in test/config/schema.test.ts: ${missing.join(', ')}`).toEqual([]);
  });

  describe.each(RUN_OPTION_KEYS.filter((key) => key in ROWS))('%s', (key) => {
    const row = ROWS[key];

    it(`reads ${envName(key)}`, () => {
      expect(load(key, row.set[0])).toMatchObject(row.set[1]);
    });

    it('unset: the default', () => {
      const expected = row.unset;
      if ('error' in expected) expect(messageOf(() => load(key, undefined))).toBe(expected.error);
      else expect(absentAsUndefined(load(key, undefined), expected)).toMatchObject(expected);
    });

    it.each(row.inside ?? [])('accepts %j', (value, expected) => {
      expect(load(key, value)).toMatchObject(expected);
    });

    const outside = Array.isArray(row.outside) ? row.outside : [];
    it.each(outside)('refuses %j, naming the option', (value, message) => {
      const text = messageOf(() => load(key, value));
      expect(text).toBe(message);
      expect(text).not.toContain('\n');
    });
  });
});
