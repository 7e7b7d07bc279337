import type { Logger } from 'pino';
import { listenTo, type RunOutcome, type WorkerEmitter } from './worker-events.js';
import { readerPosition, type StreamPosition } from './stream-position.js';

export interface StartSummaryOptions {
  /** The worker's event bus; the summary only listens. */
  events: WorkerEmitter;
  logger: Logger;
  /** Time between summary lines (default: 60 s). */
  intervalMs?: number;
  /** `--max-in-progress`: the budget `inFlight` is counted against (the line shows `budget: "<in flight>/<budget>"`). */
  maxInProgress?: number;
  /** Clock, for tests (default: Date.now). */
  now?: () => number;
  /** Lag and backlog age, shared with other readers (default: observed here, on `now`). */
  position?: StreamPosition;
}

export interface SummaryLine {
  intervalSeconds: number;
  /** Runs ended per second (one handler on one event). */
  runsPerSecond: number;
  /** Runs ended in the interval, by outcome. */
  runs: Record<RunOutcome, number>;
  /** @deprecated The old name of `runsPerSecond`, same value (docs/api.md "Deprecated names"). */
  eventsPerSecond: number;
  /** @deprecated The old name of `runs`, same value. */
  events: Record<RunOutcome, number>;
  lag: string;
  /** How far behind the consumer is (durable_worker_backlog_age_seconds), to 0.1 s. */
  backlogAgeSeconds: number;
  inFlight: number;
  /** Events in flight against the budget, `<in flight>/<--max-in-progress>`, when the budget is known. */
  budget?: string;
  /** Leases held (pulled, ack not yet answered) and events queued (leased, not started), as last reported. */
  leasesHeld: number;
  queuedEvents: number;
  /** @deprecated The old name of `queuedEvents`, same value. */
  bufferedEvents: number;
  staleAcks: number;
  pulls: number;
}

export interface Summary {
  /** The line for the interval so far (also resets the interval counters). */
  flush(): SummaryLine;
  stop(): void;
}

const emptyOutcomes = (): Record<RunOutcome, number> => ({ ok: 0, failed: 0, duplicate: 0, dead_lettered: 0 });

/**
 * One info line per interval for people reading logs rather than dashboards: throughput, lag and
 * backlog age, work in flight against the budget, leases held and events queued, and stale acks (a
 * stale ack means a lease expired under us: raise --visibility or lower --limit). Counted from the
 * same events as the metrics.
 */
export function startSummary(options: StartSummaryOptions): Summary {
  const now = options.now ?? Date.now;
  const {
    position: { lag: tracker, backlog },
    release: releasePosition,
  } = readerPosition(options.position, options.events, now);
  let outcomes = emptyOutcomes();
  let staleAcks = 0;
  let pulls = 0;
  let inFlight = 0;
  let leasesHeld = 0;
  let queuedEvents = 0;
  let intervalStartMs = now();

  const stopListening = listenTo(options.events, {
    'pull:done': () => void pulls++,
    'run:done': (e) => void outcomes[e.outcome]++,
    'inflight:changed': (e) => void (inFlight = e.inFlight),
    'leases:changed': (e) => {
      leasesHeld = e.held;
      queuedEvents = e.queued;
    },
    'ack:done': (e) => {
      if (e.status === 'stale') staleAcks++;
    },
  });

  const flush = (): SummaryLine => {
    const at = now();
    const intervalSeconds = Math.max((at - intervalStartMs) / 1_000, 0.001);
    const total = outcomes.ok + outcomes.failed + outcomes.duplicate + outcomes.dead_lettered;
    const runsPerSecond = Math.round((total / intervalSeconds) * 100) / 100;
    const line: SummaryLine = {
      intervalSeconds: Math.round(intervalSeconds * 10) / 10,
      runsPerSecond,
      runs: outcomes,
      lag: tracker.lag.toString(),
      backlogAgeSeconds: Math.round(backlog.ageSeconds() * 10) / 10,
      inFlight,
      ...(options.maxInProgress === undefined ? {} : { budget: `${inFlight}/${options.maxInProgress}` }),
      leasesHeld,
      queuedEvents,
      staleAcks,
      pulls,
      eventsPerSecond: runsPerSecond,
      events: outcomes,
      bufferedEvents: queuedEvents,
    };
    outcomes = emptyOutcomes();
    staleAcks = 0;
    pulls = 0;
    intervalStartMs = at;
    return line;
  };

  const timer = setInterval(() => options.logger.info({ summary: flush() }, 'summary'), options.intervalMs ?? 60_000);
  // A summary never keeps the process alive.
  timer.unref();

  return {
    flush,
    stop() {
      clearInterval(timer);
      stopListening();
      releasePosition();
    },
  };
}
