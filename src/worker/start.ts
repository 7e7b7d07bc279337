import type { Logger } from 'pino';
import type { ConsumerApi } from '../client/consumer-api.js';
import type { WorkerConfig } from '../config/types.js';
import type { RunningWorker, StartWorkerOptions, WorkerEnd } from './running-worker.js';
import { openDeadLetterStore } from '../dead-letter/index.js';
import type { DeadLetterSink } from '../dead-letter/sink.js';
import { startDispatcher } from '../dispatch/index.js';
import { CONSUMER_WINDOW_EVENTS, flowLimitsOf } from '../config/flow-defaults.js';
import { RETRY_DEFAULTS } from '../config/failure-defaults.js';
import type { Dispatcher } from '../dispatch/types.js';
import { loadHandlerSet } from '../handlers/handler-set.js';
import { requireTransactionalStore } from '../idempotency/transactional-store.js';
import type { LoadedHandler } from '../handlers/loader.js';
import { Router } from '../handlers/router.js';
import type { IdempotencyStore } from '../idempotency/store.js';
import type { WorkerEmitter } from '../observability/worker-events.js';
import { createWorkerEventBus } from './event-bus.js';
import { systemClock, type Clock } from '../runtime/clock.js';
import { startTracing } from '../tracing/index.js';
import { deferredRunsOf } from '../idempotency/deferred.js';
import { Breakers, breakerOptionsOf } from './breakers.js';
import { RecentChains } from './recent-chains.js';
import { DeferredRunner } from './deferred-runner.js';
import { OrphanedClaims } from './orphaned-claims.js';
import { WorkerFlow } from './flow.js';
import type { LeaseContext } from './lease-view.js';
import { InFlightCounter } from './in-flight.js';
import { DEFAULT_PULL_TIMINGS, type PullTimings } from './pull-options.js';
import { Readiness } from './readiness.js';
import { runCleanups, startAfterSetup, tearDownHandlers, type Cleanup } from './life-cycle.js';
import { RateLimiter, safetyMarginMs } from './timing.js';
import { startInstruments } from './instruments.js';
import { openIdempotencyStore, openPlatformClient, transactionsOf } from './worker-resources.js';
import type { RunGate } from '../limits/run-gate.js';

export { WORKER_TOKEN_SCOPE } from './worker-resources.js';

/**
 * Assembles and starts a worker: logger, client, idempotency store, dead-letter sink, handlers
 * (folder + `@forward`), dispatcher, metrics + health server, summary, flow control. Start-up problems
 * (a bad handler module: DW_ERR_HANDLER_LOAD; a taken port or bad URL: DW_ERR_CONFIG; an unreachable
 * store: DW_ERR_STORE) reject, after closing whatever was already opened.
 */
export async function startWorker(config: WorkerConfig, options: StartWorkerOptions = {}): Promise<RunningWorker> {
  const logger = options.logger ?? (await import('../observability/logger.js')).createLogger({ level: config.logLevel });
  const events = createWorkerEventBus(logger);
  const readiness = new Readiness(events);
  const inFlight = new InFlightCounter(events);
  const cleanups: Cleanup[] = [];
  const forward =
    config.forwardUrl === undefined
      ? undefined
      : { url: config.forwardUrl, mode: config.forwardMode, rate: config.forwardRate, concurrency: config.forwardConcurrency };
  const { maxInProgress, maxLeases } = flowLimitsOf(config);
  // Every wait and deadline of the worker runs on it (LeaseContext.clock).
  const clock = options.clock ?? systemClock;

  let client: ConsumerApi;
  let store: IdempotencyStore;
  let deadLetter: DeadLetterSink;
  let dispatcher: Dispatcher;
  let warmedUp: Promise<void>;
  let router: Router<LoadedHandler>;
  let metricsUrl: string | undefined;
  let limits: RunGate | undefined;
  // `--otel`: before the handlers load, so their own instrumentation finds the SDK. Closed last:
  // its final flush carries the spans of the last acks.
  const tracing = await startTracing({ enabled: config.otel === true, destination: config.destination });
  cleanups.push({ name: 'tracing', run: () => tracing.close() });
  try {
    const handlers = await loadHandlerSet({ handlersDir: config.handlersDir, forward });
    requireTransactionalStore(handlers, config.idempotencyUrl);
    router = new Router(handlers);
    logger.info({ handlers: handlers.map((h) => ({ name: h.name, types: h.types })) }, `loaded ${handlers.length} handler(s)`);

    client = options.client ?? (await openPlatformClient(config, maxLeases, cleanups));
    store = options.store ?? (await openIdempotencyStore(config, maxLeases, cleanups));
    limits = (await import('../limits/create.js')).createRunGate(store, handlers, {
      visibilityMs: config.visibilitySeconds * 1_000,
      canDefer: deferredRunsOf(store) !== undefined,
      clock,
      logger,
    });
    const sink =
      options.deadLetter ??
      (await openDeadLetterStore(config.deadLetterUrl, {
        prefix: config.idempotencyPrefix,
        onBackgroundError: (err) => logger.warn({ err }, 'dead-letter sink: background error'),
      }));
    cleanups.push({ name: 'dead-letter sink', run: () => sink.close() });
    deadLetter = sink;

    ({ dispatcher, warmedUp } = startDispatcher({
      isolation: config.isolation,
      handlers,
      handlersDir: config.handlersDir,
      forward,
      logger,
      logLevel: config.logLevel,
      maxInProgress,
      defaultTimeoutMs: config.handlerTimeoutMs,
      otel: tracing.tracer.enabled,
      transactions: transactionsOf(config, handlers, maxInProgress),
      clock,
    }));
    cleanups.push({ name: 'dispatcher', run: () => dispatcher.close() });
    client.ensureCredential().catch(() => {});

    metricsUrl = await startInstruments({
      config,
      events,
      logger,
      readiness,
      handlers: router.handlers.map((handler) => handler.name),
      store,
      sink,
      limits,
      maxInProgress,
      healthServer: options.healthServer ?? true,
      summaryIntervalMs: options.summaryIntervalMs,
      cleanups,
    });
    // What precedes overlapped the handler threads' start (docs/benchmarks.md#cold-start), with the
    // credential and the HTTP client for the first pull (errors are the pull's to report).
    await warmedUp;
  } catch (err) {
    await runCleanups(cleanups, logger);
    throw err;
  }
  readiness.handlersLoaded();

  const force = new AbortController();
  let endReason: WorkerEnd | undefined;
  let resolveDone: (end: WorkerEnd) => void = () => {};
  const done = new Promise<WorkerEnd>((resolve) => (resolveDone = resolve));
  let closing: Promise<void> | undefined;

  const breakers = new Breakers(
    router.handlers.map((handler) => handler.name),
    breakerOptionsOf(config),
    logger,
    (change) => {
      events.emit('breaker:state', change);
      flow.scheduler.breakerChanged(change);
      runner?.breakerChanged();
      flow.controller.maybePull();
    },
    clock,
  );
  const visibilityMs = config.visibilitySeconds * 1_000;
  // Runs that must wait are deferred to the store when it holds them (docs/architecture.md, "Deferred runs").
  const deferred = deferredRunsOf(store);
  const orphans = new OrphanedClaims(store, logger, () => flow.controller.storeAnswered(), clock);
  const leaseContext: LeaseContext = {
    destination: config.destination,
    api: client,
    store,
    dispatcher,
    deadLetter,
    router,
    events,
    logger,
    clock,
    visibilitySeconds: config.visibilitySeconds,
    maxAttempts: config.maxAttempts,
    retryBackoff: { minMs: config.retryBackoffMinMs ?? RETRY_DEFAULTS.retryBackoffMinMs, maxMs: config.retryBackoffMaxMs ?? RETRY_DEFAULTS.retryBackoffMaxMs },
    breakers,
    storeFailed: (err) => flow.controller.storeFailed(err),
    storeAnswered: () => {
      orphans.giveBack();
      flow.controller.storeAnswered();
    },
    claimsLost: (keys, owner) => orphans.add(keys, owner),
    ...(deferred === undefined ? {} : { deferred, recentChains: new RecentChains(visibilityMs), runDeferredAt: (atMs: number) => runner?.runAt(atMs) }),
    nearDeadlineWarnings: new RateLimiter(60_000),
    forceSignal: force.signal,
    tracer: tracing.tracer,
    limits,
  };
  let controllerIdle = false;
  // --exit-when-idle (docs/configuration.md): caught up (every workerId pulled with since start, the last pull
  // answered 204), no lease held, nothing in flight, no deferred run left in the store.
  const stopIfIdle = () => {
    if (config.exitWhenIdle && controllerIdle && inFlight.count === 0 && (runner?.idle ?? true) && endReason === undefined) {
      endReason = { reason: 'idle' };
      logger.info('every worker is caught up and nothing is in flight: stopping (--exit-when-idle)');
      void close();
    }
  };
  const flow = new WorkerFlow({
    leaseContext,
    api: client,
    destination: config.destination,
    limit: config.limit,
    visibilitySeconds: config.visibilitySeconds,
    workerIdPrefix: config.workerIdPrefix,
    limits: {
      limit: config.limit,
      floorLeases: config.workers,
      maxLeases,
      maxInProgress,
      windowEvents: CONSUMER_WINDOW_EVENTS,
      // Half of a lease's working time: a lease pulled now leaves its last event as long again to finish.
      startWithinMs: (visibilityMs - safetyMarginMs(visibilityMs)) / 2,
    },
    inFlight,
    readiness,
    logger,
    timings: { ...DEFAULT_PULL_TIMINGS, ...options.timings },
    clock,
    forceSignal: force.signal,
    onIdle(idle) {
      controllerIdle = idle;
      stopIfIdle();
    },
  });
  const runner =
    deferred === undefined
      ? undefined
      : new DeferredRunner({
          deferred,
          scheduler: flow.scheduler,
          context: leaseContext,
          breakers,
          handlers: new Map(router.handlers.map((h) => [h.name, h])),
          ownerPrefix: `${flow.ids.slots[0]?.id ?? 'worker'}:${process.pid}:${Date.now().toString(36)}`,
          clock,
          logger,
          onIdle: stopIfIdle,
        });

  const close = (): Promise<void> => {
    closing ??= (async () => {
      setup.cancel();
      const shutdownMs = config.shutdownTimeoutSeconds * 1_000;
      const shutdownEndsAt = Date.now() + shutdownMs;
      // Phase 2 of the drain: abort what is still running; its leases are acked `failed` at once.
      const forceTimer = setTimeout(() => {
        logger.warn({ inFlight: inFlight.count, shutdownTimeoutSeconds: config.shutdownTimeoutSeconds }, 'shutdown timeout: aborting events still in flight');
        force.abort();
      }, shutdownMs);
      runner?.stop();
      orphans.close();
      try {
        await flow.drain();
      } catch (err) {
        endReason ??= { reason: 'fatal', error: err };
        logger.fatal({ err }, 'draining failed');
      } finally {
        clearTimeout(forceTimer);
        force.abort();
        breakers.close();
        // After the last event: what is left of the shutdown timeout (at least a second).
        await tearDownHandlers(router.handlers, dispatcher, Math.max(1_000, shutdownEndsAt - Date.now()), logger);
        await runCleanups(cleanups, logger);
      }
      resolveDone(endReason ?? { reason: 'closed' });
    })();
    return closing;
  };

  const setup = startAfterSetup({
    handlers: router.handlers,
    dispatcher,
    readiness,
    logger,
    start: () => {
      flow.start();
      runner?.start();
    },
  });
  logger.info({ workers: config.workers, maxInProgress, maxLeases, destination: config.destination, isolation: config.isolation }, 'worker started');
  return {
    close,
    done,
    metricsUrl,
    events,
    limits: limits?.metrics,
    get ready() {
      return readiness.ready;
    },
  };
}
