import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { DEAD_LETTERS_METRIC, registerDeadLetterGauge, type DeadLetterGaugeOptions } from '../dead-letter/gauge.js';
import { DEFERRED_OLDEST_AGE_METRIC, DEFERRED_RUNS_METRIC, registerDeferredGauges, type DeferredGaugeOptions } from './deferred-gauges.js';
import { LIMIT_ALLOWED_RATE_METRIC, LIMIT_THROTTLES_METRIC, LIMIT_WAITING_RUNS_METRIC, registerLimitGauges, type LimitGaugeOptions } from './limit-gauges.js';
import { listenTo, type WorkerEmitter, type WorkerEventMap } from './worker-events.js';
import { LabelledHistogram, PendingCount, flushOnCollect } from './hot-path-metrics.js';
import { readerPosition, type StreamPosition } from './stream-position.js';

/** Every metric name of docs/metrics.md, prefixed: dashboards and alerts depend on them. */
export const METRIC_PREFIX = 'durable_worker_';
export const METRIC_NAMES = {
  runs: `${METRIC_PREFIX}runs_total`,
  /** @deprecated The old name of `runs` (docs/api.md "Deprecated names"): exported beside it, same values. */
  events: `${METRIC_PREFIX}events_total`,
  handlerDuration: `${METRIC_PREFIX}handler_duration_seconds`,
  pulls: `${METRIC_PREFIX}pulls_total`,
  acks: `${METRIC_PREFIX}acks_total`,
  lag: `${METRIC_PREFIX}lag_events`,
  committedSequence: `${METRIC_PREFIX}committed_sequence`,
  inFlight: `${METRIC_PREFIX}in_flight_events`,
  lastCaughtUp: `${METRIC_PREFIX}last_caught_up_timestamp_seconds`,
  leasesHeld: `${METRIC_PREFIX}leases_held`,
  pullDuration: `${METRIC_PREFIX}pull_duration_seconds`,
  ackDuration: `${METRIC_PREFIX}ack_duration_seconds`,
  /** The backlog signal (docs/metrics.md), read at scrape. */
  backlogAge: `${METRIC_PREFIX}backlog_age_seconds`,
  /** Listeners of the event bus that threw (src/worker/event-bus.ts). */
  listenerErrors: `${METRIC_PREFIX}listener_errors_total`,
  /** Each handler's circuit breaker (0 closed, 1 half-open, 2 open). */
  breakerState: `${METRIC_PREFIX}breaker_state`,
  deadLetters: DEAD_LETTERS_METRIC,
  /** Runs waiting in the store, per handler, read at scrape. */
  deferredRuns: DEFERRED_RUNS_METRIC,
  deferredOldestAge: DEFERRED_OLDEST_AGE_METRIC,
  /** The handlers' limits, per handler, read at scrape (limit-gauges.ts). */
  limitAllowedRate: LIMIT_ALLOWED_RATE_METRIC,
  limitWaitingRuns: LIMIT_WAITING_RUNS_METRIC,
  limitThrottles: LIMIT_THROTTLES_METRIC,
} as const;

/** 1 ms .. 60 s: quick in-memory handlers up to calls that approach a default lease. */
export const HANDLER_DURATION_BUCKETS_SECONDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** 1 ms .. 30 s: a pull or an ack on loopback up to one retried across a slow network (an ack retries until its lease expires). */
export const ROUND_TRIP_BUCKETS_SECONDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** The events a user may listen to on `worker.events` (WorkerEventMap), for zero-initialised series. */
const WATCHED_EVENTS = [
  'pull:done',
  'lease:pulled',
  'run:done',
  'inflight:changed',
  'leases:changed',
  'ack:done',
  'caught-up',
  'lease:near-deadline',
  'pull:crashed',
  'ready:changed',
  'breaker:state',
  'batch:pulled',
  'event:done',
  'loop:crashed',
] as const satisfies readonly (keyof WorkerEventMap)[];
const PULL_STATUSES = ['200', '204', '409', '429', '4xx', '5xx', 'error'] as const;
const ACK_STATUSES = ['committed', 'requeued', 'stale', 'error'] as const;

export interface CreateMetricsOptions {
  /** The worker's event bus; metrics only listen. */
  events: WorkerEmitter;
  /** Label of the per-destination gauges. */
  destination: string;
  /** Add prom-client's process and Node.js metrics (default: true). */
  collectDefaultMetrics?: boolean;
  /** The `dead_letters` gauge's count of the sink (src/dead-letter/gauge.ts); without one it has no series. */
  deadLetters?: DeadLetterGaugeOptions;
  /** Lag, committed cursor and backlog age, shared with other readers (default: observed here). */
  position?: StreamPosition;
  /** The handlers' names: their breaker series start at 0 (closed). */
  handlers?: readonly string[];
  /** The deferred runs' gauges (deferred-gauges.ts); without a store that holds them, no series. */
  deferred?: DeferredGaugeOptions;
  /** The handlers' limits (limit-gauges.ts); without handlers that declare limits, no series. */
  limits?: LimitGaugeOptions | undefined;
}

/** `durable_worker_breaker_state` values: ordered by how much is held back. */
export const BREAKER_STATE_VALUES = { closed: 0, 'half-open': 1, open: 2 } as const;

export interface WorkerMetrics {
  /** A registry of its own (never prom-client's global one): several workers can share a process. */
  registry: Registry;
  /** Stops listening to the event bus. */
  close(): void;
}

/** Prometheus metrics derived from the worker's events (they subscribe, and never drive the worker). */
export function createMetrics(options: CreateMetricsOptions): WorkerMetrics {
  const registry = new Registry();
  const registers = [registry];
  if (options.collectDefaultMetrics ?? true) collectProcessMetrics(registry);

  // Written once per handler run: counted and observed without prom-client's per-call label hashing.
  const runCounts: PendingCount[] = [];
  // Both names count the same runs (docs/api.md "Deprecated names"): each scrape flushes into both.
  const runCounter = (name: string, help: string) =>
    new Counter({ name, help, labelNames: ['type', 'outcome'], registers, collect: flushOnCollect(runCounts) });
  const runs = runCounter(METRIC_NAMES.runs, 'Runs (one handler on one event) that ended, by outcome');
  const deprecatedEvents = runCounter(METRIC_NAMES.events, 'Deprecated: durable_worker_runs_total under its old name, same values');
  const handlerDuration = new LabelledHistogram({
    name: METRIC_NAMES.handlerDuration,
    help: 'Time a handler took for one event',
    labelName: 'type',
    buckets: HANDLER_DURATION_BUCKETS_SECONDS,
    registers,
  });
  // Written once per batch: counted like the events, and the lag read from its tracker at scrape
  // time: prom-client's label handling is costly next to an addition, and would run four times per batch.
  const pullCounts: PendingCount[] = [];
  const pulls = new Counter({
    name: METRIC_NAMES.pulls,
    help: 'Pull requests by answer',
    labelNames: ['status'],
    registers,
    collect: flushOnCollect(pullCounts),
  });
  const ackCounts: PendingCount[] = [];
  const acks = new Counter({
    name: METRIC_NAMES.acks,
    help: 'Acknowledgements by answer',
    labelNames: ['status'],
    registers,
    collect: flushOnCollect(ackCounts),
  });
  const {
    position: { lag: tracker, backlog },
    release: releasePosition,
  } = readerPosition(options.position, options.events);
  const destination = { destination: options.destination };
  // Kept with its documented meaning (docs/metrics.md); it counts what this process leased and has not seen committed,
  // never the events still waiting in the stream (docs/metrics.md): backlog_age_seconds is the backlog.
  new Gauge({
    name: METRIC_NAMES.lag,
    help: 'Last seen sequence minus committed cursor (leased by this process, not yet committed; not the backlog)',
    labelNames: ['destination'],
    registers,
    collect() {
      this.set(destination, Number(tracker.lag));
    },
  });
  new Gauge({
    name: METRIC_NAMES.committedSequence,
    help: 'Committed cursor reported by the last acknowledgement',
    labelNames: ['destination'],
    registers,
    collect() {
      if (tracker.committed !== undefined) this.set(destination, Number(tracker.committed));
    },
  });
  new Gauge({
    name: METRIC_NAMES.backlogAge,
    help: 'Seconds since the oldest event this process last leased was appended to the stream; 0 once a pull answers 204 (caught up)',
    labelNames: ['destination'],
    registers,
    collect() {
      this.set(destination, backlog.ageSeconds());
    },
  });
  const inFlight = new Gauge({ name: METRIC_NAMES.inFlight, help: 'Events in flight across the process (at most --max-in-progress)', registers });
  // Flow control (docs/operations.md, "Flow control"): written per lease, not per event.
  const leasesHeld = new Gauge({
    name: METRIC_NAMES.leasesHeld,
    help: 'Leases held: pulled and not yet acknowledged, an ack on its way included (at most --max-leases)',
    registers,
  });
  const pullDuration = new Histogram({
    name: METRIC_NAMES.pullDuration,
    help: 'Time from sending a pull to its answer (or failure)',
    buckets: ROUND_TRIP_BUCKETS_SECONDS,
    registers,
  });
  const ackDuration = new Histogram({
    name: METRIC_NAMES.ackDuration,
    help: 'Time from sending an acknowledgement to its answer, retries included (or to giving it up)',
    buckets: ROUND_TRIP_BUCKETS_SECONDS,
    registers,
  });
  const lastCaughtUp = new Gauge({ name: METRIC_NAMES.lastCaughtUp, help: 'Unix time of the last pull that answered 204 (caught up)', registers });
  const listenerErrors = new Counter({
    name: METRIC_NAMES.listenerErrors,
    help: "Listeners of the worker's events that threw; the worker ignored them",
    labelNames: ['event'],
    registers,
  });
  const breakerState = new Gauge({
    name: METRIC_NAMES.breakerState,
    help: "Each handler's circuit breaker: 0 closed (its events run), 1 half-open (one probe runs), 2 open (its events wait)",
    labelNames: ['handler'],
    registers,
  });
  for (const handler of options.handlers ?? []) breakerState.set({ handler }, BREAKER_STATE_VALUES.closed);
  registerDeadLetterGauge(registers, options.deadLetters);
  registerDeferredGauges(registers, { ...options.deferred, ...(options.handlers === undefined ? {} : { handlers: options.handlers }) });
  registerLimitGauges(registers, options.limits ?? { handlers: [], view: () => undefined });

  // Zero-initialised series make rate() and absent() behave from the first scrape.
  for (const event of WATCHED_EVENTS) listenerErrors.inc({ event }, 0);
  const pullCount = statusCounts(pulls, PULL_STATUSES, pullCounts);
  const ackCount = statusCounts(acks, ACK_STATUSES, ackCounts);

  // Outcome, then type: no key string is built per run.
  const runCountsByOutcome = new Map<string, Map<string, PendingCount>>();
  const runCount = (type: string, outcome: string) => {
    let byType = runCountsByOutcome.get(outcome);
    if (byType === undefined) {
      byType = new Map();
      runCountsByOutcome.set(outcome, byType);
    }
    let count = byType.get(type);
    if (count === undefined) {
      const series = [runs.labels({ type, outcome }), deprecatedEvents.labels({ type, outcome })];
      count = new PendingCount({ inc: (value) => series.forEach((one) => one.inc(value)) });
      byType.set(type, count);
      runCounts.push(count);
    }
    return count;
  };
  const stopListening = listenTo(options.events, {
    'pull:done': (e) => {
      pullCount(e.status).inc();
      pullDuration.observe(e.durationMs / 1_000);
    },
    'run:done': (e) => {
      runCount(e.event.type, e.outcome).inc();
      // A duplicate never reached a handler: its zero time would flatten the histogram.
      if (e.outcome !== 'duplicate' && e.handler !== undefined) handlerDuration.series(e.event.type).observe(e.durationMs / 1_000);
    },
    'inflight:changed': (e) => inFlight.set(e.inFlight),
    'leases:changed': (e) => leasesHeld.set(e.held),
    'ack:done': (e) => {
      ackCount(e.status).inc();
      if (e.durationMs !== undefined) ackDuration.observe(e.durationMs / 1_000);
    },
    'caught-up': (e) => lastCaughtUp.set(e.at / 1_000),
    'listener:error': (e) => listenerErrors.inc({ event: e.event }),
    'breaker:state': (e) => breakerState.set({ handler: e.handler }, BREAKER_STATE_VALUES[e.state]),
  });

  return {
    registry,
    close() {
      stopListening();
      releasePosition();
    },
  };
}

/**
 * prom-client's default process and Node.js metrics, less the three gauges named `_total`
 * (`nodejs_active_handles_total`, `..._requests_total`, `..._resources_total`): a `_total` suffix
 * promises a counter, so `promtool check metrics` flags them, and a query with rate() on them would
 * be wrong. Nothing is lost: each is the sum of the per-`type` gauge beside it
 * (`sum(nodejs_active_handles)`).
 */
export const DROPPED_DEFAULT_METRICS = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'] as const;

function collectProcessMetrics(registry: Registry): void {
  collectDefaultMetrics({ register: registry });
  for (const name of DROPPED_DEFAULT_METRICS) registry.removeSingleMetric(name);
}

/**
 * The counts of a counter labelled by `status`, one per status, the known ones created (at zero)
 * at once so that rate() and absent() behave from the first scrape; `into` is the counter's
 * `flushOnCollect` list.
 */
function statusCounts(counter: Counter, statuses: readonly string[], into: PendingCount[]): (status: string) => PendingCount {
  const byStatus = new Map<string, PendingCount>();
  const countOf = (status: string) => {
    let count = byStatus.get(status);
    if (count === undefined) {
      counter.inc({ status }, 0);
      count = new PendingCount(counter.labels({ status }));
      byStatus.set(status, count);
      into.push(count);
    }
    return count;
  };
  for (const status of statuses) countOf(status);
  return countOf;
}
