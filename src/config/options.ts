/**
 * The catalogue of `durable-worker run` options: one row per option, shared by the config loader
 * (env names, config-file keys, error labels) and the CLI (yargs definitions, --help). Defaults live
 * in the zod schema (schema.ts), not here: a yargs default would hide the env var and the config file.
 */
export type OptionKind = 'string' | 'number' | 'boolean';

export interface OptionSpec {
  /** camelCase key, as yargs gives it and as programmatic callers write it. */
  key: RunOptionKey;
  kind: OptionKind;
  /** Never echoed in messages or logs. */
  secret?: boolean;
  /** --help text, including the default. */
  describe: string;
  /** --help group. */
  group: 'Connection' | 'Handlers' | 'Processing' | 'Stores' | 'Observability' | 'Shutdown';
}

export const RUN_OPTION_KEYS = [
  'baseUrl',
  'authUrl',
  'destination',
  'tenant',
  'clientId',
  'clientSecret',
  'clientSecretFile',
  'apiKey',
  'handlers',
  'forwardUrl',
  'forwardMode',
  'forwardRate',
  'forwardConcurrency',
  'handlerTimeout',
  'workers',
  'workerIdPrefix',
  'limit',
  'visibility',
  'concurrency',
  'maxInProgress',
  'maxLeases',
  'maxAttempts',
  'retryBackoffMin',
  'retryBackoffMax',
  'breaker',
  'breakerFailureRatio',
  'breakerWindow',
  'breakerWindowTime',
  'breakerCooldown',
  'isolation',
  'idempotency',
  'idempotencyPrefix',
  'idempotencyTtl',
  'deadLetter',
  'metricsPort',
  'metricsHost',
  'allowedHosts',
  'logLevel',
  'otel',
  'exitWhenIdle',
  'shutdownTimeout',
] as const;

export type RunOptionKey = (typeof RUN_OPTION_KEYS)[number];

/** Raw `run` input: camelCase option names, values as flags, env, a config file or code give them. */
export type RunOptionsInput = Partial<Record<RunOptionKey, unknown>> & { config?: unknown };

const specs: Record<RunOptionKey, Omit<OptionSpec, 'key'>> = {
  baseUrl: { kind: 'string', group: 'Connection', describe: 'Public API base URL, e.g. http://127.0.0.1:8787 (required)' },
  authUrl: { kind: 'string', group: 'Connection', describe: 'Token issuer base; token at {auth-url}/oauth2/token (default: --base-url)' },
  destination: { kind: 'string', group: 'Connection', describe: 'Event destination id of a DURABLE_CONSUMER (required)' },
  tenant: { kind: 'string', group: 'Connection', describe: 'Tenant: the token audience (required with client credentials)' },
  clientId: { kind: 'string', group: 'Connection', describe: 'Client id of an application with scope read:events' },
  clientSecret: { kind: 'string', group: 'Connection', secret: true, describe: 'Client secret (prefer --client-secret-file or the env var)' },
  clientSecretFile: { kind: 'string', group: 'Connection', describe: 'File holding the client secret (trailing newline ignored)' },
  apiKey: { kind: 'string', group: 'Connection', secret: true, describe: 'API key, sent as x-api-key (instead of client credentials)' },
  handlers: { kind: 'string', group: 'Handlers', describe: 'Folder of handler modules (.js, .mjs, .ts) (default: ./handlers)' },
  forwardUrl: { kind: 'string', group: 'Handlers', describe: 'Built-in forwarding handler: POST each event to this URL as a CloudEvents HTTP request' },
  forwardMode: { kind: 'string', group: 'Handlers', describe: 'CloudEvents content mode of --forward-url: binary | structured (default: binary)' },
  forwardRate: {
    kind: 'string',
    group: 'Handlers',
    describe:
      "Limits the forwarding handler's requests: MAX/PER (e.g. 40/1s), adaptive (found from 429s), or adaptive:MAX/PER; across replicas with a redis:// or postgres:// store",
  },
  forwardConcurrency: {
    kind: 'number',
    group: 'Handlers',
    describe: "The forwarding handler's requests in flight at once (across replicas with a redis:// or postgres:// store)",
  },
  handlerTimeout: {
    kind: 'string',
    group: 'Handlers',
    describe: 'Per-event handler timeout: seconds or a duration like 30s, 2m (default: until the lease deadline)',
  },
  workers: {
    kind: 'number',
    group: 'Processing',
    describe: 'Number of workerIds that pull at least while there is work: the leases the process holds at least (default: 1)',
  },
  workerIdPrefix: { kind: 'string', group: 'Processing', describe: 'workerIds are <prefix>-<index> (default: hostname)' },
  limit: { kind: 'number', group: 'Processing', describe: 'Pull batch size 1..100: the most events one lease holds (default: 20)' },
  visibility: { kind: 'number', group: 'Processing', describe: 'Lease seconds 1..600 (default: 60)' },
  concurrency: { kind: 'number', group: 'Processing', describe: 'Events in flight at once per worker; same subject stays in order (default: 8)' },
  maxInProgress: {
    kind: 'number',
    group: 'Processing',
    describe: 'Events in flight at once in the process, across every lease it holds (default: --workers x --concurrency)',
  },
  maxLeases: {
    kind: 'number',
    group: 'Processing',
    describe:
      'Leases held at once, pulls and acks on their way included: workerIds <prefix>-0 up to <prefix>-<max-leases - 1> (default: twice the leases the 1,000-event window holds at --limit, at most 32, at least --workers)',
  },

  maxAttempts: {
    kind: 'number',
    group: 'Processing',
    describe:
      'Runs of one handler on one event that may fail before the event is dead-lettered for it; deliveries in which the handler did not run do not count (default: 5)',
  },
  retryBackoffMin: {
    kind: 'string',
    group: 'Processing',
    describe: "Wait after a handler's first failed run on an event, doubling with each failure, with jitter: a duration like 500ms, 1s (default: 1s)",
  },
  retryBackoffMax: {
    kind: 'string',
    group: 'Processing',
    describe: 'Longest wait between two runs of a handler on an event, also the cap of a RetryLaterError: a duration like 30s, 5m (default: 60s)',
  },
  breaker: {
    kind: 'boolean',
    group: 'Processing',
    describe:
      'A circuit breaker per handler: when most of its recent runs fail, its events wait (spending no attempts) until a probe succeeds; --no-breaker turns it off (default: true)',
  },
  breakerFailureRatio: {
    kind: 'number',
    group: 'Processing',
    describe:
      "A handler's breaker opens when at least this share of its runs in the last --breaker-window-time failed (at least --breaker-window runs), 0..1 (default: 0.5)",
  },
  breakerWindow: {
    kind: 'number',
    group: 'Processing',
    describe: 'The fewest runs of a handler in its time window that its breaker weighs at all (default: 20)',
  },
  breakerWindowTime: { kind: 'string', group: 'Processing', describe: 'How far back a breaker weighs runs: a duration like 10s (default: 10s)' },
  breakerCooldown: { kind: 'string', group: 'Processing', describe: 'How long an open breaker waits before one probe run: a duration like 3s (default: 3s)' },
  isolation: { kind: 'string', group: 'Processing', describe: 'thread (piscina worker threads) | none (in-process) (default: thread)' },
  idempotency: {
    kind: 'string',
    group: 'Stores',
    describe: 'memory | sqlite:PATH | redis://... | postgres://... (default: sqlite:.durable-worker/idempotency.sqlite)',
  },
  idempotencyPrefix: { kind: 'string', group: 'Stores', describe: 'Key namespace in shared stores (default: <tenant>:<destination>)' },
  idempotencyTtl: { kind: 'string', group: 'Stores', describe: 'How long done marks are kept: seconds or a duration like 12h, 7d (default: 7d)' },
  deadLetter: {
    kind: 'string',
    group: 'Stores',
    describe:
      'Dead-letter sink: file:PATH (JSON lines) | sqlite:PATH | redis://... | postgres://... (default: the --idempotency URL when it is redis:// or postgres://, else file:.durable-worker/dead-letter.jsonl)',
  },
  metricsPort: { kind: 'number', group: 'Observability', describe: 'Health + metrics port; 0 = random free port (default: 9464)' },
  metricsHost: { kind: 'string', group: 'Observability', describe: 'Health + metrics host (default: 0.0.0.0; dev: 127.0.0.1)' },
  allowedHosts: {
    kind: 'string',
    group: 'Observability',
    describe:
      'Host names the local servers answer besides localhost, 127.0.0.0/8 and [::1], comma-separated; .example.com allows every name below it. Given (or with --metrics-host on loopback), the metrics server refuses requests for other names (default: none)',
  },
  logLevel: { kind: 'string', group: 'Observability', describe: 'fatal | error | warn | info | debug | trace | silent (default: info)' },
  otel: {
    kind: 'boolean',
    group: 'Observability',
    describe:
      'Start the OpenTelemetry SDK (main thread and handler threads): spans per pull, handler run and ack, exported as the standard OTEL_* variables say (OTLP http/protobuf or http/json) (default: false)',
  },
  exitWhenIdle: { kind: 'boolean', group: 'Shutdown', describe: 'Exit 0 once every worker got 204 and nothing is in flight (default: false)' },
  shutdownTimeout: {
    kind: 'string',
    group: 'Shutdown',
    describe:
      'How long to drain on SIGTERM/SIGINT before unfinished events are acked failed: seconds or a duration like 25s, 1m; a drain ends at the latest when the leases in flight run out (default: 25)',
  },
};

export const RUN_OPTIONS: readonly OptionSpec[] = RUN_OPTION_KEYS.map((key) => ({ key, ...specs[key] }));

export const SECRET_OPTION_KEYS: ReadonlySet<string> = new Set(RUN_OPTIONS.filter((o) => o.secret).map((o) => o.key));

/** `baseUrl` -> `base-url`. */
export function toKebab(key: string): string {
  return key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

/** `base-url` or `baseUrl` -> `baseUrl`. */
export function toCamel(name: string): string {
  return name.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

/** `baseUrl` -> `--base-url`. */
export function flagName(key: string): string {
  return `--${toKebab(key)}`;
}

/** `baseUrl` -> `DURABLE_WORKER_BASE_URL`. */
export function envName(key: string): string {
  return `DURABLE_WORKER_${toKebab(key).replace(/-/g, '_').toUpperCase()}`;
}
