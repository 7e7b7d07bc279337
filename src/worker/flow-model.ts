/**
 * When to pull: the flow model of the pull controller (docs/architecture.md, "The flow model"). Pure
 * arithmetic over what the controller counts and what it measured; time comes in as `nowMs`.
 *
 * Prior art: NATS JetStream's `consume()` pulls again when its buffer of messages falls below a
 * threshold; Pub/Sub's streaming pull stops at a ceiling of outstanding messages; Kafka's fetcher
 * sends the next fetch while records are still buffered (queued, here). Here the threshold follows what is measured:
 * enough events queued to cover two pull round trips at the rate events start, plus a budget's worth.
 */

/**
 * Events (or anything) per second, an exponentially weighted moving average that may follow a rise
 * faster than a fall: time constant `riseTauMs` while the samples are above it, `fallTauMs` (by
 * default the same) while they are below.
 */
export class RateAverage {
  readonly #riseTauMs: number;
  readonly #fallTauMs: number;
  #perSecond = 0;
  #pending = 0;
  #sinceMs: number | undefined = undefined;

  constructor(riseTauMs: number, fallTauMs: number = riseTauMs) {
    this.#riseTauMs = riseTauMs;
    this.#fallTauMs = fallTauMs;
  }

  add(count: number, nowMs: number): void {
    this.#pending += count;
    this.#fold(nowMs);
  }

  perSecond(nowMs: number): number {
    this.#fold(nowMs);
    return this.#perSecond;
  }

  /** Folds what came since the last sample in, once a sample spans long enough to mean something. */
  #fold(nowMs: number): void {
    if (this.#sinceMs === undefined) {
      this.#sinceMs = nowMs;
      return;
    }
    const spanMs = nowMs - this.#sinceMs;
    if (spanMs < MIN_SAMPLE_MS) return;
    const sample = (this.#pending * 1_000) / spanMs;
    const tauMs = sample > this.#perSecond ? this.#riseTauMs : this.#fallTauMs;
    this.#perSecond += (1 - Math.exp(-spanMs / tauMs)) * (sample - this.#perSecond);
    this.#pending = 0;
    this.#sinceMs = nowMs;
  }
}

const MIN_SAMPLE_MS = 10;
/**
 * How fast the start rate follows a rise: within about one pull round trip to a distant platform, so
 * that the buffer (two round trips at that rate) doubles per round trip while it runs dry, as slow
 * start intends. Followed as slowly as a fall, a fresh process far from the platform would pull late
 * for its first round trips, each pull sized by a rate lagging the one its events could start at.
 */
const START_RATE_RISE_TAU_MS = 50;
/** How fast it follows a fall: over a quarter of a second, so that one slow turn of the event loop does not empty the buffer. */
const START_RATE_FALL_TAU_MS = 250;
/** Weight of the newest pull round trip in its average. */
const PULL_RTT_WEIGHT = 0.2;

export interface FlowLimits {
  /** `--limit`: the events a pull may bring, counted for every pull in flight. */
  limit: number;
  /** `--workers`: leases held or coming below which the controller pulls whatever the buffer holds. */
  floorLeases: number;
  /** `--max-leases`: leases held or coming at most (the pool of workerIds). */
  maxLeases: number;
  /** `--max-in-progress`: events running at once in the process. */
  maxInProgress: number;
  /** Events leased and unacknowledged the consumer allows (spec, Limits: 1,000). */
  windowEvents: number;
  /** A new lease's last event should start within this many ms of its pull (half the lease's working time). */
  startWithinMs: number;
}

/** What the controller counts when it considers a pull. */
export interface FlowCounts {
  /** Leases held: pulled and not yet acknowledged (an ack on its way included). */
  held: number;
  /** Pulls sent and not answered. */
  pulling: number;
  /** Events of held leases queued (not started, not given up) that no retry time, breaker or limit holds back. */
  runnable: number;
  /** Events of held leases whose ack has not been sent. */
  unacked: number;
}

/** Why no pull now: no free workerId, the window, the deadline rule, or enough queued. */
export type HoldBack = 'ceiling' | 'window' | 'deadline' | 'enough';

export class FlowModel {
  readonly limits: FlowLimits;
  readonly #startRate = new RateAverage(START_RATE_RISE_TAU_MS, START_RATE_FALL_TAU_MS);
  #pullRttMs: number | undefined = undefined;

  constructor(limits: FlowLimits) {
    this.limits = limits;
  }

  eventsStarted(count: number, nowMs: number): void {
    this.#startRate.add(count, nowMs);
  }

  /** An answered pull took `durationMs` from send to answer. */
  pullAnswered(durationMs: number): void {
    this.#pullRttMs = this.#pullRttMs === undefined ? durationMs : this.#pullRttMs + PULL_RTT_WEIGHT * (durationMs - this.#pullRttMs);
  }

  /** Events per second that started, lately. */
  startRate(nowMs: number): number {
    return this.#startRate.perSecond(nowMs);
  }

  /** Events the controller keeps leased and not started: two pull round trips' worth at the start rate, plus a budget. */
  targetQueued(nowMs: number): number {
    return (2 * this.startRate(nowMs) * (this.#pullRttMs ?? 0)) / 1_000 + this.limits.maxInProgress;
  }

  /** Why another pull should not be sent now, or undefined when it should. */
  holdBack(counts: FlowCounts, nowMs: number): HoldBack | undefined {
    const { limit, floorLeases, maxLeases, windowEvents, startWithinMs } = this.limits;
    const leases = counts.held + counts.pulling;
    if (leases >= maxLeases) return 'ceiling';
    // Spec: at most 1,000 events leased and unacknowledged (429 beyond). Acks already sent do not
    // count: the platform serves them before a pull sent after them, and frees their events.
    const coming = (counts.pulling + 1) * limit;
    if (counts.unacked + coming > windowEvents) return 'window';
    if (leases < floorLeases) return undefined;
    const rate = this.startRate(nowMs);
    // The last event of the new lease would start only after every event queued before it.
    if (rate > 0 && ((counts.runnable + coming) * 1_000) / rate > startWithinMs) return 'deadline';
    if (counts.runnable + counts.pulling * limit >= this.targetQueued(nowMs)) return 'enough';
    return undefined;
  }
}
