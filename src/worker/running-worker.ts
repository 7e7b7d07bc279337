import type { Logger } from 'pino';
import type { ConsumerApi } from '../client/consumer-api.js';
import type { WorkerConfig } from '../config/types.js';
import type { DeadLetterSink } from '../dead-letter/sink.js';
import type { DeadLetterStore } from '../dead-letter/store.js';
import type { IdempotencyStore } from '../idempotency/store.js';
import type { LimitsReader } from '../limits/limiter.js';
import type { WorkerEmitter } from '../observability/worker-events.js';
import type { Clock } from '../runtime/clock.js';
import type { PullTimings } from './pull-options.js';

/** A running worker as `startWorker` hands it out, and what it may be given (src/worker/start.ts). */

export type WorkerEnd = { reason: 'idle' | 'closed' | 'fatal'; error?: unknown };

/** What the CLI and the development loop drive of a running worker. */
export interface WorkerHandle {
  /** Drains: stops pulling, requeues what has not started, lets events in flight finish within shutdownTimeoutSeconds, then aborts the rest; no lease is left held. Idempotent. */
  close(): Promise<void>;
  /** Resolves when the worker has stopped: `idle` (--exit-when-idle), `closed`, or `fatal`. */
  done: Promise<WorkerEnd>;
  /** Base URL of the health + metrics server (`${metricsUrl}/metrics`). */
  metricsUrl: string | undefined;
}

/** A start function as the CLI and the development loop load it (lazily: types only until then). */
export type StartWorker = (config: WorkerConfig, options?: { logger?: Logger }) => Promise<WorkerHandle>;

export interface RunningWorker extends WorkerHandle {
  /** The worker's event bus (metrics and logs subscribe to it). */
  events: WorkerEmitter;
  /** /readyz state. */
  readonly ready: boolean;
  /** Its handlers' limits as they are now (what the limit metrics and the dev console read); undefined when none declares limits. */
  limits: LimitsReader | undefined;
}

export interface StartWorkerOptions {
  /** Default: a pino logger at config.logLevel on stdout. */
  logger?: Logger;
  /** Default: the platform client built from the config (closed by the worker). */
  client?: ConsumerApi;
  /** Default: the store named by config.idempotencyUrl (closed by the worker). */
  store?: IdempotencyStore;
  /** Default: the sink named by config.deadLetterUrl (closed by the worker). */
  deadLetter?: DeadLetterSink | DeadLetterStore;
  /** The pull controller's waits (tests shorten them). */
  timings?: Partial<PullTimings>;
  /**
   * What the worker's time runs on: the pull controller's waits (after 204, 409, 429, errors), lease
   * deadlines, retry times, breakers and deferred runs, and in-process handlers' timeouts. Default:
   * the system clock; tests pass a fake one (`createFakeClock` of durable-worker/testing) to move
   * time on without waiting. Handlers in threads time out on the system clock in their thread: with
   * `--isolation thread`, start a fake clock at `Date.now()`.
   */
  clock?: Clock;
  /** Interval of the summary log line; default 60 s. */
  summaryIntervalMs?: number;
  /** Serve /healthz, /readyz, /metrics (default true). */
  healthServer?: boolean;
}
