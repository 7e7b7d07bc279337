/**
 * The resolved configuration of `durable-worker run` (defaults filled, validated). The zod schema in
 * schema.ts produces exactly this shape; internals take this type, never raw flags.
 */
export interface WorkerConfig {
  /** Public API base, e.g. http://127.0.0.1:8787 (no trailing slash). */
  baseUrl: string;
  /** Token issuer base; the token is at {authUrl}/oauth2/token. Default = baseUrl. */
  authUrl: string;
  /** Event destination id (a DURABLE_CONSUMER). */
  destination: string;
  /** Tenant id: the token audience (required with client credentials). */
  tenant?: string;
  clientId?: string;
  /** Read from --client-secret or --client-secret-file. Never logged. */
  clientSecret?: string;
  /** Alternative credential: sent as x-api-key. Never logged. */
  apiKey?: string;
  /** Folder of handler modules (absolute path). Default ./handlers. */
  handlersDir: string;
  /** Number of workerIds that pull at least while there is work (default 1). */
  workers: number;
  /** workerIds are `<workerIdPrefix>-<index>` (default: hostname). */
  workerIdPrefix: string;
  /** Pull batch size 1..100: the most events one lease holds (default 20). */
  limit: number;
  /** Lease seconds 1..600 (default 60). */
  visibilitySeconds: number;
  /** Events in flight at once per worker (default 8). */
  concurrency: number;
  /** Events in flight at once in the process, across its leases (default: workers x concurrency; see flowLimits). */
  maxInProgress?: number;
  /** Leases held at once, pulls and acks on their way included: the workerId pool's size (default: see flowLimits). */
  maxLeases?: number;
  /** Runs of one handler on one event that may fail before the event is dead-lettered for it (default 5). */
  maxAttempts: number;
  /** Wait after a handler's first failed run on an event, doubling with each failure (default 1000). */
  retryBackoffMinMs?: number;
  /** The longest wait between two runs, also the cap of a handler's own RetryLaterError (default 60000). */
  retryBackoffMaxMs?: number;
  /** A circuit breaker per handler (default true). */
  breaker?: boolean;
  /** A handler's breaker opens when at least this share of its runs in `breakerWindowTimeMs` failed (default 0.5). */
  breakerFailureRatio?: number;
  /** The fewest runs in its time window a breaker weighs at all (default 20). */
  breakerWindow?: number;
  /** How far back a breaker weighs runs, in ms (default 10,000). */
  breakerWindowTimeMs?: number;
  /** How long an open breaker waits before one probe run (default 3000). */
  breakerCooldownMs?: number;
  /** memory | sqlite:PATH | redis://... | postgres://... */
  idempotencyUrl: string;
  /** Key namespace in shared stores (default `<tenant>:<destination>`). */
  idempotencyPrefix: string;
  /** How long done marks are kept, ms (default 7 days). */
  idempotencyTtlMs: number;
  /** file:PATH (JSON lines) | sqlite:PATH | redis://... | postgres://... (default: a shared idempotency URL, else file:.durable-worker/dead-letter.jsonl). */
  deadLetterUrl: string;
  /** Health + metrics port; 0 = random free port. Default 9464. */
  metricsPort: number;
  metricsHost: string;
  /**
   * Host names the metrics server answers besides the loopback ones (`--allowed-hosts`); given, any
   * other name gets 403 (observability/health-server.ts).
   */
  allowedHosts?: readonly string[];
  /** Exit 0 once every worker got 204 and nothing is in flight. */
  exitWhenIdle: boolean;
  logLevel: string;
  /** Start the OpenTelemetry SDK (exporter from the standard OTEL_* variables). Default false (also when absent, as in configs built by hand). */
  otel?: boolean;
  /** thread (piscina) or none (in-process). */
  isolation: 'thread' | 'none';
  /** Seconds to drain on SIGTERM/SIGINT before unfinished events are acked failed (default 25). */
  shutdownTimeoutSeconds: number;
  /** Built-in forwarding handler target (CloudEvents over HTTP). */
  forwardUrl?: string;
  /** Forwarding content mode (default binary). */
  forwardMode: 'binary' | 'structured';
  /** `--forward-rate`: the forwarding handler's rate (`MAX/PER`, `adaptive`, `adaptive:MAX/PER`). */
  forwardRate?: string;
  /** `--forward-concurrency`: the forwarding handler's requests in flight at once. */
  forwardConcurrency?: number;
  /** Per-event handler timeout in ms; default: until the lease deadline. */
  handlerTimeoutMs?: number;
}
