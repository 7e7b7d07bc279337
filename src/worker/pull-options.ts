/** The pull controller's options: what it drives, and how long it waits after each kind of answer. */
import type { Logger } from 'pino';
import type { ConsumerApi } from '../client/consumer-api.js';
import type { Clock } from '../runtime/clock.js';
import type { WorkerEmitter } from '../observability/worker-events.js';
import type { FlowModel } from './flow-model.js';
import type { LeaseContext } from './lease-view.js';
import type { Readiness } from './readiness.js';
import type { Scheduler } from './scheduler.js';
import type { WorkerIdPool } from './worker-ids.js';

/** Waits of the pull controller, in ms. */
export interface PullTimings {
  /** First wait after a 204 (caught up); doubles up to idleMaxMs, reset by work. Default 100. */
  idleMinMs: number;
  /** Default 2000. */
  idleMaxMs: number;
  /** Wait while the consumer is paused (409). Default 2000. */
  pausedMs: number;
  /** 429 without Retry-After, 5xx and network errors: base and ceiling of exponential backoff. Defaults 200 / 30000. */
  errorBaseMs: number;
  errorMaxMs: number;
  /** 400/401/403/404: the configuration is wrong; retry slowly in case it is fixed. Default 15000. */
  configRetryMs: number;
}

export const DEFAULT_PULL_TIMINGS: PullTimings = {
  idleMinMs: 100,
  idleMaxMs: 2_000,
  pausedMs: 2_000,
  errorBaseMs: 200,
  errorMaxMs: 30_000,
  configRetryMs: 15_000,
};

/**
 * The longest back-off for a failing idempotency store: a probe costs one pull and one ack, and a
 * store that comes back (a failover, a restart) should not wait for the platform's 30 s ceiling.
 */
export const DEFAULT_STORE_BACKOFF_MAX_MS = 5_000;

export interface PullControllerOptions {
  api: ConsumerApi;
  destination: string;
  limit: number;
  visibilitySeconds: number;
  ids: WorkerIdPool;
  model: FlowModel;
  scheduler: Scheduler;
  leaseContext: LeaseContext;
  readiness: Readiness;
  events: WorkerEmitter;
  logger: Logger;
  timings: PullTimings;
  /** What the waits (after 204, 409, 429, errors, a crash) run on: the system clock, or a test's fake one. */
  clock: Clock;
  /** Aborted at forced shutdown: a pull on its way is cut. */
  forceSignal: AbortSignal;
  /** Whether the process is idle: caught up, nothing held or coming, every workerId pulled with since start. */
  onIdle(idle: boolean): void;
}
