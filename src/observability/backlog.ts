import type { CloudEvent } from '../types.js';

/**
 * How far behind the consumer is, in seconds: the backlog signal that KEDA scales on and the lag
 * alert fires on (docs/metrics.md "Backlog age").
 *
 * The pull answer carries no stream head, so no worker can count the events still waiting. What a
 * worker does see is when the events it leases were appended (CloudEvents `time`, set by the
 * platform) and whether a pull found nothing left (caught up). The platform hands out the oldest
 * events not yet leased first, so the newest position a lease has brought, the append time of its
 * first event (the oldest: spec, "Events are ordered within a batch"), is how far into the stream the
 * process has got: the events after it are the backlog. The age, read at scrape, is now minus that
 * frontier: it rises at up to one second per second while the process falls behind and drops to 0
 * once it is caught up (`caught-up`: a pull found nothing while the process held no lease). A
 * redelivered older batch does not move the frontier back: its events are not waiting in the stream.
 *
 * Events without a usable `time` (the spec does not promise one) take the last time the process was
 * caught up, or the tracker's start: every event still waiting then was appended after it
 * (redeliveries aside), so the age is an upper bound of theirs, "time since caught up".
 *
 * Work per lease, none per event: the first event's `time` is parsed once per lease.
 */
export class BacklogAgeTracker {
  readonly #now: () => number;
  /** Append time (ms) of the newest position leased; undefined once caught up, or before the first lease. */
  #frontierMs: number | undefined = undefined;
  /** The latest time the process was caught up, or the tracker's start before the first. */
  #caughtUpAtMs: number;

  /** `now`: the clock, for tests (default Date.now). */
  constructor(now: () => number = Date.now) {
    this.#now = now;
    this.#caughtUpAtMs = now();
  }

  /** A lease came (events in stream order). An empty one says nothing. */
  observeBatch(events: readonly Pick<CloudEvent, 'time'>[]): void {
    if (events.length === 0) return;
    const positionMs = appendedAtMs(events) ?? this.#caughtUpAtMs;
    if (this.#frontierMs === undefined || positionMs > this.#frontierMs) this.#frontierMs = positionMs;
  }

  /** The process was caught up at `atMs`: nothing left to lease, nothing held. */
  observeCaughtUp(atMs: number): void {
    this.#frontierMs = undefined;
    if (atMs > this.#caughtUpAtMs) this.#caughtUpAtMs = atMs;
  }

  /**
   * Seconds since the frontier was appended; 0 when caught up or before the first lease. Never
   * negative: an event stamped ahead of this clock (skew) is new.
   */
  ageSeconds(): number {
    if (this.#frontierMs === undefined) return 0;
    return Math.max(0, (this.#now() - this.#frontierMs) / 1_000);
  }
}

/** The `time` of the first event that has a parsable one (normally the first event); else undefined. */
function appendedAtMs(events: readonly Pick<CloudEvent, 'time'>[]): number | undefined {
  for (const { time } of events) {
    if (typeof time !== 'string') continue;
    const ms = Date.parse(time);
    if (Number.isFinite(ms)) return ms;
  }
  return undefined;
}
