import { Gauge, type Registry } from 'prom-client';
import type { DeferredStats } from '../idempotency/deferred.js';

export const DEFERRED_RUNS_METRIC = 'durable_worker_deferred_runs';
export const DEFERRED_OLDEST_AGE_METRIC = 'durable_worker_deferred_oldest_age_seconds';

/** How long one read of the store serves scrapes (Prometheus and a second scraper share it). */
const CACHE_MS = 5_000;

export interface DeferredGaugeOptions {
  /** The store's per-handler counts (DeferredRuns.stats); absent with a store that holds none: no series. */
  stats?: (() => Promise<Map<string, DeferredStats>>) | undefined;
  /** The handlers loaded: their series start at 0. */
  handlers?: readonly string[];
  onError?: (err: unknown) => void;
  now?: () => number;
}

/**
 * `durable_worker_deferred_runs{handler}` and `durable_worker_deferred_oldest_age_seconds{handler}`:
 * the runs waiting in the store (docs/metrics.md), read at scrape time, at most once per five
 * seconds. Every replica sharing the store reports the same figures. A handler seen once stays at 0
 * once its runs are gone.
 */
export function registerDeferredGauges(registers: Registry[], options: DeferredGaugeOptions): void {
  const { stats, onError = () => {}, now = Date.now } = options;
  const handlers = new Set(options.handlers ?? []);
  let freshUntil = 0;
  let reading: Promise<void> | undefined;
  const collect = stats === undefined ? {} : { collect: read };
  const runs = new Gauge({
    name: DEFERRED_RUNS_METRIC,
    help: 'Runs deferred in the idempotency store (a retry time, an open breaker, or an earlier run of their chain), per handler',
    labelNames: ['handler'],
    registers,
    ...collect,
  });
  const oldest = new Gauge({
    name: DEFERRED_OLDEST_AGE_METRIC,
    help: 'Seconds since the oldest run deferred in the store was first deferred, per handler (0 when none)',
    labelNames: ['handler'],
    registers,
    ...collect,
  });
  // A store that holds no deferred runs (memory) declares both names without series, as a `file:`
  // sink does for dead_letters: dashboards and rules find the names either way.
  if (stats === undefined) return;
  for (const handler of handlers) {
    runs.set({ handler }, 0);
    oldest.set({ handler }, 0);
  }
  async function read(): Promise<void> {
    if (now() < freshUntil) return;
    reading ??= stats!()
      .then((byHandler) => {
        const nowMs = now();
        for (const handler of byHandler.keys()) handlers.add(handler);
        for (const handler of handlers) {
          const stat = byHandler.get(handler);
          runs.set({ handler }, stat?.count ?? 0);
          oldest.set({ handler }, stat === undefined ? 0 : Math.max(0, (nowMs - stat.oldestDeferredAtMs) / 1_000));
        }
        freshUntil = nowMs + CACHE_MS;
      }, onError)
      .finally(() => (reading = undefined));
    await reading;
  }
}
