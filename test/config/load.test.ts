import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadWorkerConfig, resolveWorkerConfig } from '../../src/config/load.js';
import { RUN_OPTIONS, envName } from '../../src/config/options.js';
import { ConfigError } from '../../src/errors.js';

const SECRET = 'sup3r-s3cret-value';
const credentials = { tenant: 't1', clientId: 'client-1', clientSecret: SECRET };
const minimal = { baseUrl: 'http://127.0.0.1:8787', destination: 'dest-1', ...credentials };

function tmp(): string {
  return mkdtempSync(join(tmpdir(), 'dw-config-'));
}

function errorOf(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

describe('defaults', () => {
  it('fills every default', () => {
    const cwd = tmp();
    const config = loadWorkerConfig({ flags: minimal, env: {}, cwd, hostname: 'host-a' });
    expect(config).toEqual({
      baseUrl: 'http://127.0.0.1:8787',
      authUrl: 'http://127.0.0.1:8787',
      destination: 'dest-1',
      tenant: 't1',
      clientId: 'client-1',
      clientSecret: SECRET,
      handlersDir: join(cwd, 'handlers'),
      workers: 1,
      workerIdPrefix: 'host-a',
      limit: 20,
      visibilitySeconds: 60,
      concurrency: 8,
      // --workers x --concurrency; twice the 1,000-event window's leases of 20, at most 32.
      maxInProgress: 8,
      maxLeases: 32,
      maxAttempts: 5,
      retryBackoffMinMs: 1_000,
      retryBackoffMaxMs: 60_000,
      breaker: true,
      breakerFailureRatio: 0.5,
      breakerWindow: 20,
      breakerWindowTimeMs: 10_000,
      breakerCooldownMs: 3_000,
      idempotencyUrl: `sqlite:${join(cwd, '.durable-worker/idempotency.sqlite')}`,
      idempotencyPrefix: 't1:dest-1',
      idempotencyTtlMs: 7 * 24 * 3600 * 1000,
      deadLetterUrl: `file:${join(cwd, '.durable-worker/dead-letter.jsonl')}`,
      metricsPort: 9464,
      metricsHost: '0.0.0.0',
      exitWhenIdle: false,
      logLevel: 'info',
      otel: false,
      isolation: 'thread',
      shutdownTimeoutSeconds: 25,
      forwardMode: 'binary',
    });
  });

  it('sizes the budget and the lease ceiling from --workers, --concurrency and --limit unless given', () => {
    expect(resolveWorkerConfig({ ...minimal, workers: 4, concurrency: 16, limit: 100 })).toMatchObject({ maxInProgress: 64, maxLeases: 20 });
    expect(resolveWorkerConfig({ ...minimal, workers: 40, limit: 100 })).toMatchObject({ maxInProgress: 320, maxLeases: 40 });
    expect(resolveWorkerConfig({ ...minimal, maxInProgress: '5', maxLeases: '3' })).toMatchObject({ maxInProgress: 5, maxLeases: 3 });
    expect(() => resolveWorkerConfig({ ...minimal, workers: 4, maxLeases: 2 })).toThrow(
      '--max-leases must be at least --workers (4), the leases the process keeps in flight while there is work (got 2)',
    );
    expect(() => resolveWorkerConfig({ ...minimal, maxLeases: 0 })).toThrow('--max-leases must be 1..1000 (got 0)');
    expect(() => resolveWorkerConfig({ ...minimal, maxInProgress: 'lots' })).toThrow('--max-in-progress must be an integer 1..100000');
  });

  it('removes trailing slashes and defaults auth-url to base-url', () => {
    const config = resolveWorkerConfig({ ...minimal, baseUrl: 'https://api.example.com/base//', forwardUrl: 'http://app:3000/events/' });
    expect(config.baseUrl).toBe('https://api.example.com/base');
    expect(config.authUrl).toBe('https://api.example.com/base');
    expect(config.forwardUrl).toBe('http://app:3000/events');
  });

  it('idempotency prefix is the destination alone with an API key and no tenant', () => {
    const config = resolveWorkerConfig({ baseUrl: 'http://h', destination: 'd9', apiKey: 'k' });
    expect(config.idempotencyPrefix).toBe('d9');
    expect(config.apiKey).toBe('k');
    expect(config.clientId).toBeUndefined();
  });

  it('an unset shutdown timeout stays inside a short lease', () => {
    expect(resolveWorkerConfig({ ...minimal, visibility: 10 }).shutdownTimeoutSeconds).toBe(5);
    expect(resolveWorkerConfig({ ...minimal, visibility: 600 }).shutdownTimeoutSeconds).toBe(25);
  });

  it('accepts a shutdown timeout as long as or longer than the lease (a drain ends at the latest when the leases run out)', () => {
    expect(resolveWorkerConfig({ ...minimal, visibility: 60, shutdownTimeout: 60 }).shutdownTimeoutSeconds).toBe(60);
    expect(resolveWorkerConfig({ ...minimal, visibility: 10, shutdownTimeout: 120 })).toMatchObject({ visibilitySeconds: 10, shutdownTimeoutSeconds: 120 });
    const env = { DURABLE_WORKER_VISIBILITY: '30', DURABLE_WORKER_SHUTDOWN_TIMEOUT: '45' };
    expect(loadWorkerConfig({ flags: minimal, env }).shutdownTimeoutSeconds).toBe(45);
  });

  it('truncates a long hostname so that every workerId fits 200 characters', () => {
    const config = loadWorkerConfig({ flags: { ...minimal, workers: 12 }, env: {}, hostname: 'h'.repeat(250) });
    expect(`${config.workerIdPrefix}-11`.length).toBe(200);
  });

  it('parses durations and keeps absolute paths', () => {
    const config = resolveWorkerConfig({
      ...minimal,
      idempotencyTtl: '12h',
      handlerTimeout: '1500ms',
      idempotency: 'sqlite:/var/x.db',
      deadLetter: 'file:/var/dl.jsonl',
    });
    expect(config.idempotencyTtlMs).toBe(12 * 3600 * 1000);
    expect(config.handlerTimeoutMs).toBe(1500);
    expect(config.idempotencyUrl).toBe('sqlite:/var/x.db');
    expect(config.deadLetterUrl).toBe('file:/var/dl.jsonl');
    expect(resolveWorkerConfig({ ...minimal, idempotencyTtl: 90 }).idempotencyTtlMs).toBe(90_000);
  });

  it('the dead-letter sink follows a shared idempotency store unless given; relative paths resolve', () => {
    const sinkOf = (input: Record<string, unknown>) => resolveWorkerConfig({ ...minimal, ...input }).deadLetterUrl;
    expect(sinkOf({ idempotency: 'postgres://app:pw@db/app' })).toBe('postgres://app:pw@db/app');
    expect(sinkOf({ idempotency: 'redis://cache:6379/1' })).toBe('redis://cache:6379/1');
    expect(sinkOf({ idempotency: 'memory' })).toBe(`file:${join(process.cwd(), '.durable-worker/dead-letter.jsonl')}`);
    expect(sinkOf({ idempotency: 'sqlite:x.sqlite' })).toBe(`file:${join(process.cwd(), '.durable-worker/dead-letter.jsonl')}`);
    expect(sinkOf({ idempotency: 'redis://cache', deadLetter: 'postgres://db/app' })).toBe('postgres://db/app');
    expect(sinkOf({ idempotency: 'redis://cache', deadLetter: 'file:dl.jsonl' })).toBe(`file:${join(process.cwd(), 'dl.jsonl')}`);
    expect(sinkOf({ deadLetter: 'sqlite:state/dl.sqlite' })).toBe(`sqlite:${join(process.cwd(), 'state/dl.sqlite')}`);
  });

  it('accepts every store URL form', () => {
    for (const url of ['memory', 'redis://127.0.0.1:6379', 'rediss://u:p@r.example:6380/1', 'postgres://app:app@127.0.0.1/app', 'postgresql://db/app']) {
      expect(resolveWorkerConfig({ ...minimal, idempotency: url }).idempotencyUrl).toBe(url);
    }
  });
});

describe('sources', () => {
  it('reads every option from its DURABLE_WORKER_<UPPER_SNAKE> env var, coercing numbers and booleans', () => {
    const env = {
      DURABLE_WORKER_BASE_URL: 'http://127.0.0.1:9999/',
      DURABLE_WORKER_AUTH_URL: 'http://127.0.0.1:9998',
      DURABLE_WORKER_DESTINATION: 'env-dest',
      DURABLE_WORKER_TENANT: 'env-tenant',
      DURABLE_WORKER_CLIENT_ID: 'env-client',
      DURABLE_WORKER_CLIENT_SECRET: SECRET,
      DURABLE_WORKER_WORKERS: '3',
      DURABLE_WORKER_WORKER_ID_PREFIX: 'pod-7',
      DURABLE_WORKER_LIMIT: '50',
      DURABLE_WORKER_VISIBILITY: '120',
      DURABLE_WORKER_CONCURRENCY: '4',
      DURABLE_WORKER_MAX_ATTEMPTS: '9',
      DURABLE_WORKER_IDEMPOTENCY: 'memory',
      DURABLE_WORKER_IDEMPOTENCY_PREFIX: 'ns',
      DURABLE_WORKER_METRICS_PORT: '0',
      DURABLE_WORKER_METRICS_HOST: '127.0.0.1',
      DURABLE_WORKER_EXIT_WHEN_IDLE: '1',
      DURABLE_WORKER_LOG_LEVEL: 'DEBUG',
      DURABLE_WORKER_ISOLATION: 'none',
      DURABLE_WORKER_SHUTDOWN_TIMEOUT: '30',
      DURABLE_WORKER_FORWARD_MODE: 'structured',
    };
    const config = loadWorkerConfig({ env, cwd: tmp() });
    expect(config).toMatchObject({
      baseUrl: 'http://127.0.0.1:9999',
      authUrl: 'http://127.0.0.1:9998',
      destination: 'env-dest',
      tenant: 'env-tenant',
      clientId: 'env-client',
      clientSecret: SECRET,
      workers: 3,
      workerIdPrefix: 'pod-7',
      limit: 50,
      visibilitySeconds: 120,
      concurrency: 4,
      maxAttempts: 9,
      idempotencyUrl: 'memory',
      idempotencyPrefix: 'ns',
      metricsPort: 0,
      metricsHost: '127.0.0.1',
      exitWhenIdle: true,
      logLevel: 'debug',
      isolation: 'none',
      shutdownTimeoutSeconds: 30,
      forwardMode: 'structured',
    });
    expect(loadWorkerConfig({ env: { ...env, DURABLE_WORKER_EXIT_WHEN_IDLE: 'false' } }).exitWhenIdle).toBe(false);
  });

  it('names env vars after the options', () => {
    expect(envName('baseUrl')).toBe('DURABLE_WORKER_BASE_URL');
    expect(envName('clientSecretFile')).toBe('DURABLE_WORKER_CLIENT_SECRET_FILE');
    expect(RUN_OPTIONS.map((o) => o.key)).toEqual(expect.arrayContaining(['baseUrl', 'idempotencyPrefix', 'forwardUrl', 'shutdownTimeout']));
  });

  it('flag beats env beats config file beats default', () => {
    const dir = tmp();
    const file = join(dir, 'worker.json');
    writeFileSync(file, JSON.stringify({ 'base-url': 'http://file', destination: 'file-dest', limit: 30, visibility: 90, concurrency: 2, ...credentials }));
    const config = loadWorkerConfig({
      flags: { config: file, limit: '10' },
      env: { DURABLE_WORKER_LIMIT: '40', DURABLE_WORKER_VISIBILITY: '100' },
      cwd: dir,
    });
    expect(config.limit).toBe(10);
    expect(config.visibilitySeconds).toBe(100);
    expect(config.concurrency).toBe(2);
    expect(config.baseUrl).toBe('http://file');
    expect(config.maxAttempts).toBe(5);
  });

  it('takes --config from DURABLE_WORKER_CONFIG and treats empty env vars as unset', () => {
    const dir = tmp();
    writeFileSync(join(dir, 'c.json'), JSON.stringify({ ...minimal, tenant: 'from-file' }));
    const config = loadWorkerConfig({ env: { DURABLE_WORKER_CONFIG: 'c.json', DURABLE_WORKER_TENANT: '' }, cwd: dir });
    expect(config.tenant).toBe('from-file');
  });

  it('reads the secret from --client-secret-file without its trailing newline', () => {
    const dir = tmp();
    writeFileSync(join(dir, 'secret'), `${SECRET}\n`);
    const { clientSecret: _omit, ...rest } = minimal;
    const config = loadWorkerConfig({ flags: { ...rest, clientSecretFile: 'secret' }, env: {}, cwd: dir });
    expect(config.clientSecret).toBe(SECRET);
  });
});

describe('errors name the option in one line', () => {
  const cases: [Record<string, unknown>, string][] = [
    [{ limit: 500 }, '--limit must be 1..100 (got 500)'],
    [{ limit: 0 }, '--limit must be 1..100 (got 0)'],
    [{ limit: 'many' }, '--limit must be an integer 1..100 (got many)'],
    [{ visibility: 601 }, '--visibility must be 1..600 (got 601)'],
    [{ workers: 0 }, '--workers must be 1..256 (got 0)'],
    [{ concurrency: 1.5 }, '--concurrency must be an integer 1..1000 (got 1.5)'],
    [{ maxAttempts: -1 }, '--max-attempts must be 1..1000 (got -1)'],
    [{ metricsPort: 70000 }, '--metrics-port must be 0..65535 (got 70000)'],
    [{ isolation: 'process' }, '--isolation must be one of thread, none (got process)'],
    [{ logLevel: 'loud' }, '--log-level must be one of fatal, error, warn, info, debug, trace, silent (got loud)'],
    [{ forwardMode: 'json' }, '--forward-mode must be one of binary, structured (got json)'],
    [{ exitWhenIdle: 'maybe' }, '--exit-when-idle must be true or false (or 1/0) (got maybe)'],
    [{ baseUrl: 'ftp://x' }, '--base-url must be an http(s) URL (got ftp://x)'],
    [{ authUrl: 'not a url' }, '--auth-url must be an http(s) URL (got not a url)'],
    [{ forwardUrl: 'file:///x' }, '--forward-url must be an http(s) URL (got file:///x)'],
    [{ deadLetter: 's3://bucket' }, '--dead-letter must be file:PATH, sqlite:PATH, redis://... or postgres://... (got s3://bucket)'],
    [{ deadLetter: 'redis://:s3cret@' }, '--dead-letter must be file:PATH, sqlite:PATH, redis://... or postgres://... (got redis://:***@)'],
    [{ idempotencyTtl: '3 weeks' }, '--idempotency-ttl must be seconds or a duration like 12h, 7d (1s..3650d) (got 3 weeks)'],
    [{ shutdownTimeout: 601 }, '--shutdown-timeout must be seconds or a duration like 25s, 1m (0..10m) (got 601)'],
    [{ workerIdPrefix: 'a b' }, '--worker-id-prefix must not contain whitespace or control characters (got a b)'],
  ];
  it.each(cases)('%j', (input, message) => {
    const err = errorOf(() => resolveWorkerConfig({ ...minimal, ...input }));
    expect(err.message).toBe(message);
    expect(err.message).not.toContain('\n');
    expect(err.code).toBe('DW_ERR_CONFIG');
  });

  it('requires base-url and destination', () => {
    expect(errorOf(() => resolveWorkerConfig({ destination: 'd', apiKey: 'k' })).message).toBe('--base-url is required');
    expect(errorOf(() => resolveWorkerConfig({ baseUrl: 'http://h', apiKey: 'k' })).message).toBe('--destination is required');
  });

  it('says where a bad value came from', () => {
    const err = errorOf(() => loadWorkerConfig({ flags: minimal, env: { DURABLE_WORKER_LIMIT: '500' } }));
    expect(err.message).toBe('--limit (from DURABLE_WORKER_LIMIT) must be 1..100 (got 500)');
    const dir = tmp();
    writeFileSync(join(dir, 'c.json'), JSON.stringify({ visibility: 0 }));
    expect(errorOf(() => loadWorkerConfig({ flags: { ...minimal, config: 'c.json' }, env: {}, cwd: dir })).message).toBe(
      `--visibility (from ${join(dir, 'c.json')}) must be 1..600 (got 0)`,
    );
  });

  it('rejects unknown options and unreadable config files', () => {
    expect(errorOf(() => resolveWorkerConfig({ ...minimal, colour: 'red' })).message).toBe('unknown option "colour"');
    const dir = tmp();
    writeFileSync(join(dir, 'bad.json'), '{ nope');
    writeFileSync(join(dir, 'extra.json'), JSON.stringify({ speed: 3 }));
    expect(errorOf(() => loadWorkerConfig({ flags: { config: 'missing.json' }, env: {}, cwd: dir })).message).toBe(
      `--config: cannot read ${join(dir, 'missing.json')} (ENOENT)`,
    );
    expect(errorOf(() => loadWorkerConfig({ flags: { config: 'bad.json' }, env: {}, cwd: dir })).message).toMatch(/^--config: .*bad\.json is not valid JSON/);
    expect(errorOf(() => loadWorkerConfig({ flags: { config: 'extra.json' }, env: {}, cwd: dir })).message).toMatch(/^--config: unknown option "speed"/);
  });
});

describe('credentials', () => {
  const base = { baseUrl: 'http://h', destination: 'd' };
  it('requires one complete credential', () => {
    expect(errorOf(() => resolveWorkerConfig(base)).message).toMatch(/^credentials are required: --client-id .* or --api-key$/);
    expect(errorOf(() => resolveWorkerConfig({ ...base, clientId: 'c', tenant: 't' })).message).toBe(
      '--client-secret is required with --client-id (or use --client-secret-file)',
    );
    expect(errorOf(() => resolveWorkerConfig({ ...base, clientSecret: SECRET, tenant: 't' })).message).toBe('--client-id is required with --client-secret');
    expect(errorOf(() => resolveWorkerConfig({ ...base, clientId: 'c', clientSecret: SECRET })).message).toMatch(
      /^--tenant is required with client credentials/,
    );
  });

  it('rejects two credentials at once', () => {
    expect(errorOf(() => resolveWorkerConfig({ ...minimal, apiKey: 'k' })).message).toMatch(/^use either --api-key or client credentials/);
    expect(errorOf(() => resolveWorkerConfig({ ...minimal, clientSecretFile: '/x' })).message).toBe(
      'use either --client-secret or --client-secret-file, not both',
    );
  });

  it('reports an unreadable or empty secret file by path and errno', () => {
    const dir = tmp();
    const { clientSecret: _omit, ...rest } = minimal;
    const missing = join(dir, 'nope');
    expect(errorOf(() => resolveWorkerConfig({ ...rest, clientSecretFile: missing })).message).toBe(`--client-secret-file: cannot read ${missing} (ENOENT)`);
    writeFileSync(join(dir, 'empty'), '\n');
    expect(errorOf(() => resolveWorkerConfig({ ...rest, clientSecretFile: join(dir, 'empty') })).message).toBe(
      `--client-secret-file: ${join(dir, 'empty')} is empty`,
    );
  });

  it('never echoes a secret value in a message', () => {
    const bad: Record<string, unknown>[] = [
      { clientSecret: 12345 },
      { apiKey: SECRET },
      { apiKey: SECRET, clientSecret: undefined, clientId: undefined, baseUrl: 'nope' },
      { idempotency: `redis://user:${SECRET}@` },
      { idempotency: `mongodb://user:${SECRET}@db` },
      { baseUrl: `ftp://user:${SECRET}@h` },
      { limit: 'x', apiKey: SECRET },
    ];
    for (const input of bad) {
      let message = '';
      try {
        resolveWorkerConfig({ ...minimal, ...input });
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message, JSON.stringify(input)).not.toBe('');
      expect(message).not.toContain(SECRET);
    }
    const envErr = errorOf(() =>
      loadWorkerConfig({ flags: { ...minimal, clientSecret: undefined }, env: { DURABLE_WORKER_CLIENT_SECRET: SECRET, DURABLE_WORKER_API_KEY: SECRET } }),
    );
    expect(envErr.message).not.toContain(SECRET);
  });
});

describe('error order', () => {
  it('reports a wrong value the user gave before an option still missing', () => {
    expect(errorOf(() => resolveWorkerConfig({ limit: 500 })).message).toBe('--limit must be 1..100 (got 500)');
    expect(errorOf(() => resolveWorkerConfig({ visibility: 'soon', destination: 'd' })).message).toBe('--visibility must be an integer 1..600 (got soon)');
  });
});
