import type { Logger } from 'pino';
import type { WorkerConfig } from '../config/types.js';
import type { DeadLetterSink } from '../dead-letter/sink.js';
import type { DeadLetterStore } from '../dead-letter/store.js';
import { deferredRunsOf } from '../idempotency/deferred.js';
import type { IdempotencyStore } from '../idempotency/store.js';
import type { RunGate } from '../limits/run-gate.js';
import type { WorkerEmitter } from '../observability/worker-events.js';
import type { Cleanup } from './life-cycle.js';
import type { Readiness } from './readiness.js';

export interface InstrumentsOptions {
  config: WorkerConfig;
  events: WorkerEmitter;
  logger: Logger;
  readiness: Readiness;
  handlers: readonly string[];
  store: IdempotencyStore;
  sink: DeadLetterSink;
  limits: RunGate | undefined;
  maxInProgress: number;
  /** Serve /healthz, /readyz and /metrics (StartWorkerOptions.healthServer, default true). */
  healthServer: boolean;
  summaryIntervalMs: number | undefined;
  /** Where each started part's close goes (closed in reverse order). */
  cleanups: Cleanup[];
}

/**
 * What watches a worker without driving it (docs/architecture.md, "The data flow"): the stream's
 * position, the Prometheus metrics, the health server and the summary log line. Resolves with the
 * health server's URL, when it serves one.
 */
export async function startInstruments(o: InstrumentsOptions): Promise<string | undefined> {
  const { config, events, logger, cleanups } = o;
  // One view of the stream's position, read by the metrics and the summary line alike.
  const { observeStreamPosition } = await import('../observability/stream-position.js');
  const position = observeStreamPosition(events);
  cleanups.push({ name: 'stream position', run: () => position.close() });
  const { createMetrics } = await import('../observability/metrics.js');
  const countDead = (o.sink as Partial<Pick<DeadLetterStore, 'countDead'>>).countDead?.bind(o.sink);
  const deferred = deferredRunsOf(o.store);
  const metrics = createMetrics({
    events,
    position,
    destination: config.destination,
    handlers: o.handlers,
    deadLetters: { count: countDead, onError: (err) => logger.warn({ err }, 'dead-letter sink: counting dead records failed') },
    deferred: { stats: deferred?.stats.bind(deferred), onError: (err) => logger.warn({ err }, 'idempotency store: counting deferred runs failed') },
    limits: o.limits?.metrics,
  });
  cleanups.push({ name: 'metrics', run: () => metrics.close() });
  let url: string | undefined;
  if (o.healthServer) {
    const { startHealthServer } = await import('../observability/health-server.js');
    const { readiness } = o;
    const server = await startHealthServer({
      port: config.metricsPort,
      host: config.metricsHost,
      ...(config.allowedHosts === undefined ? {} : { allowedHosts: config.allowedHosts }),
      registry: metrics.registry,
      isReady: () => readiness.ready,
      notReadyReason: () => readiness.probeReason,
      logger,
    });
    cleanups.push({ name: 'health server', run: () => server.close() });
    url = server.url;
  }
  const { startSummary } = await import('../observability/summary.js');
  const summary = startSummary({
    events,
    position,
    logger,
    maxInProgress: o.maxInProgress,
    ...(o.summaryIntervalMs === undefined ? {} : { intervalMs: o.summaryIntervalMs }),
  });
  cleanups.push({ name: 'summary', run: () => summary.stop() });
  return url;
}
