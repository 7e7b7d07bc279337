import type { CloudEvent } from '../types.js';

/**
 * How far behind the consumer is, in seconds: the backlog signal that KEDA scales on and the lag
 * alert fires on (docs/metrics.md "Backlog age").
 *
 * The pull answer carries no stream head, so no worker can count the events still waiting. What a
 * worker does see is when the events it leases were appended (CloudEvents `time`, set by the
 * platform) and whether its last pull found nothing left (204: caught up). So, per pull loop:
 * after a 204 the loop is caught up (age 0); after a batch, its position is the append time of the
 * batch's first event, the oldest (spec: "Events are ordered within a batch"). The age, read at
 * scrape, is now minus the oldest position over the loops of the process: it rises at up to one
 * second per second while the loops hold old events and drops to 0 once they all catch up.
 *
 * Events without a usable `time` (the spec does not promise one) take the last time any loop of the
 * process was caught up, or the tracker's start: every event still waiting then was appended after
 * it (redeliveries aside), so the age is an upper bound of theirs, "time since caught up".
 *
 * Work per batch, none per event: the first event's `time` is parsed once per lease.
 */
export class BacklogAgeTracker {
  readonly #now: () => number;
  /** Per workerId: append time (ms) of the oldest event it last leased; undefined once caught up. */
  readonly #positions = new Map<string, number | undefined>();
  /** The latest 204 of any loop, or the tracker's start before the first. */
  #caughtUpAtMs: number;

  /** `now`: the clock, for tests (default Date.now). */
  constructor(now: () => number = Date.now) {
    this.#now = now;
    this.#caughtUpAtMs = now();
  }

  /** A loop leased a batch (events in stream order). An empty one says nothing. */
  observeBatch(workerId: string, events: readonly Pick<CloudEvent, 'time'>[]): void {
    if (events.length === 0) return;
    this.#positions.set(workerId, appendedAtMs(events) ?? this.#caughtUpAtMs);
  }

  /** A loop's pull answered 204 at `atMs`. */
  observeCaughtUp(workerId: string, atMs: number): void {
    this.#positions.set(workerId, undefined);
    if (atMs > this.#caughtUpAtMs) this.#caughtUpAtMs = atMs;
  }

  /**
   * Seconds since the oldest position of the process was appended; 0 when every loop is caught up or
   * none has leased anything yet. Never negative: an event stamped ahead of this clock (skew) is new.
   */
  ageSeconds(): number {
    let oldestMs = Infinity;
    for (const positionMs of this.#positions.values()) {
      if (positionMs !== undefined && positionMs < oldestMs) oldestMs = positionMs;
    }
    if (oldestMs === Infinity) return 0;
    return Math.max(0, (this.#now() - oldestMs) / 1_000);
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
