import { Gauge, type Registry } from 'prom-client';
import type { DeadLetterCount } from './store.js';

export const DEAD_LETTERS_METRIC = 'durable_worker_dead_letters';

/** How long one count serves scrapes: Prometheus and a second scraper (or a curl) share it. */
export const DEAD_LETTER_COUNT_CACHE_MS = 5_000;

export interface DeadLetterGaugeOptions {
  /** One grouped count query of the sink; absent for a sink where that is not cheap (file): no series. */
  count?: (() => Promise<DeadLetterCount[]>) | undefined;
  /** A count that failed (the scrape still answers, with the last values). */
  onError?: (err: unknown) => void;
  cacheMs?: number;
  now?: () => number;
}

/**
 * `durable_worker_dead_letters{handler,reason}`: records in state `dead`, read from the sink at
 * scrape time (at most one count query per `cacheMs`, shared by concurrent scrapes), so every
 * replica of a shared sink reports the same backlog and a replay or purge shows at the next scrape.
 * A handler and reason seen once stay as a series at 0 once drained, so graphs and `delta()` see
 * the drop instead of a vanished series.
 */
export function registerDeadLetterGauge(registers: Registry[], options: DeadLetterGaugeOptions = {}): Gauge {
  const { count, onError = () => {}, cacheMs = DEAD_LETTER_COUNT_CACHE_MS, now = Date.now } = options;
  const seen = new Map<string, { handler: string; reason: string }>();
  let freshUntil = 0;
  let reading: Promise<void> | undefined;
  const gauge: Gauge = new Gauge({
    name: DEAD_LETTERS_METRIC,
    help: 'Dead-letter records in state dead, per handler and reason (shared sinks; read at scrape)',
    labelNames: ['handler', 'reason'],
    registers,
    async collect() {
      if (count === undefined || now() < freshUntil) return;
      reading ??= count()
        .then((counts) => {
          const zeroes = new Set(seen.keys());
          for (const { handler, reason, count: value } of counts) {
            const key = JSON.stringify([handler, reason]);
            seen.set(key, { handler, reason });
            zeroes.delete(key);
            gauge.set({ handler, reason }, value);
          }
          for (const key of zeroes) gauge.set(seen.get(key)!, 0);
          freshUntil = now() + cacheMs;
        }, onError)
        .finally(() => (reading = undefined));
      await reading;
    },
  });
  return gauge;
}
