import type { WorkerConfig } from './types.js';

/** Spec (Limits): at most 1,000 events leased and unacknowledged per consumer (429 beyond). */
export const CONSUMER_WINDOW_EVENTS = 1_000;

/** The default lease ceiling never passes this, whatever the `--limit`: each lease is a workerId to pull with at start. */
const MAX_DEFAULT_LEASES = 32;

/**
 * `--max-in-progress` and `--max-leases` as given, or their defaults: the budget is what the pull
 * loops reached together before (`--workers` x `--concurrency`); the ceiling is twice the leases the
 * consumer's window holds (pulls on their way and acks being answered hold workerIds too, see
 * docs/architecture.md, "The flow model"), at most 32, and never below the floor (`--workers`).
 */
export function flowLimitsOf(config: Pick<WorkerConfig, 'workers' | 'concurrency' | 'limit' | 'maxInProgress' | 'maxLeases'>): {
  maxInProgress: number;
  maxLeases: number;
} {
  return {
    maxInProgress: config.maxInProgress ?? config.workers * config.concurrency,
    maxLeases: config.maxLeases ?? Math.max(config.workers, Math.min(MAX_DEFAULT_LEASES, 2 * Math.ceil(CONSUMER_WINDOW_EVENTS / config.limit))),
  };
}
