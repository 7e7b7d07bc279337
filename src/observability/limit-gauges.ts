import { Counter, Gauge, type Registry } from 'prom-client';
import type { LimitsView } from '../limits/limiter.js';

export const LIMIT_ALLOWED_RATE_METRIC = 'durable_worker_limit_allowed_rate';
export const LIMIT_WAITING_RUNS_METRIC = 'durable_worker_limit_waiting_runs';
export const LIMIT_THROTTLES_METRIC = 'durable_worker_limit_throttles_total';

export interface LimitGaugeOptions {
  /** The handlers that declare limits. */
  handlers: readonly string[];
  /** What the limiter says of a handler now (Limiter.view). */
  view: (handler: string) => LimitsView | undefined;
}

/**
 * Per handler with limits, read at scrape from the limiter (docs/metrics.md): the rate it allows now
 * (starts per second: the declared one, or the adaptive one as it moves), the runs waiting for a
 * permit in this process, and the throttles heard (RetryLaterError, a 429/503 to the forwarding
 * handler).
 */
export function registerLimitGauges(registers: Registry[], options: LimitGaugeOptions): void {
  const { handlers, view } = options;
  new Gauge({
    name: LIMIT_ALLOWED_RATE_METRIC,
    help: "Run starts per second a handler's rate limit allows now (the adaptive rate as it moves); no series without a rate",
    labelNames: ['handler'],
    registers,
    collect() {
      for (const handler of handlers) {
        const allowed = view(handler)?.allowedPerSecond;
        if (allowed !== undefined) this.set({ handler }, allowed);
      }
    },
  });
  new Gauge({
    name: LIMIT_WAITING_RUNS_METRIC,
    help: "A handler's runs waiting for a permit of its limits in this process, now",
    labelNames: ['handler'],
    registers,
    collect() {
      for (const handler of handlers) this.set({ handler }, view(handler)?.waiting ?? 0);
    },
  });
  const seen = new Map<string, number>();
  new Counter({
    name: LIMIT_THROTTLES_METRIC,
    help: "Throttles a handler's downstream answered (RetryLaterError, a 429/503 with Retry-After to the forwarding handler) in this process",
    labelNames: ['handler'],
    registers,
    collect() {
      for (const handler of handlers) {
        const now = view(handler)?.throttles ?? 0;
        this.inc({ handler }, now - (seen.get(handler) ?? 0));
        seen.set(handler, now);
      }
    },
  });
}
