import { systemClock, type Clock } from '../runtime/clock.js';
import type { Blocked } from './breakers.js';
import type { BreakerChange } from '../observability/worker-events.js';
import type { HeldLease } from './held-lease.js';
import type { LeaseEvent } from './lease-event.js';

/** An event that may not start yet, and what it waits for (LeaseEvent.admit). */
interface Parked {
  event: LeaseEvent;
  blocked: Blocked;
}

/**
 * The events of held leases that may not start yet (docs/architecture.md, "Retries: in the lease, or
 * carried by the store"): until a retry time, woken by one timer set for the earliest; or by an open
 * breaker, woken by the breaker's changes: all of them when it closes, and when it is half-open the
 * one with the fewest failures of that handler, as the probe (so probes do not pile attempts onto one
 * event). Woken events go back to `wake`; events that ended meanwhile are dropped here.
 */
export class ParkedEvents {
  readonly #wake: (events: LeaseEvent[]) => void;
  readonly #clock: Clock;
  #parked: Parked[] = [];
  #timer: unknown = undefined;
  #timerAtMs = Number.POSITIVE_INFINITY;
  #stopped = false;

  constructor(wake: (events: LeaseEvent[]) => void, clock: Clock = systemClock) {
    this.#wake = wake;
    this.#clock = clock;
  }

  /** Parked events that never started (a retry in the lease is counted apart). */
  get waiting(): number {
    let count = 0;
    for (const parked of this.#parked) if (!parked.event.ended && !parked.event.isRetrying) count++;
    return count;
  }

  park(event: LeaseEvent, blocked: Blocked): void {
    this.#parked.push({ event, blocked });
    if (blocked.reason === 'retry' && blocked.untilMs < this.#timerAtMs && !this.#stopped) this.#arm(blocked.untilMs);
  }

  breakerChanged(change: BreakerChange): void {
    if (change.state === 'open') return;
    const woken: LeaseEvent[] = [];
    let probe: Parked | undefined;
    let fewest = Number.POSITIVE_INFINITY;
    const kept: Parked[] = [];
    for (const parked of this.#parked) {
      if (parked.event.ended) continue;
      if (parked.blocked.reason !== 'breaker' || parked.blocked.handler !== change.handler) kept.push(parked);
      else if (change.state === 'closed') woken.push(parked.event);
      else {
        const failures = parked.event.failuresOf(change.handler);
        if (failures < fewest) {
          if (probe !== undefined) kept.push(probe);
          probe = parked;
          fewest = failures;
        } else kept.push(parked);
      }
    }
    if (probe !== undefined) woken.push(probe.event);
    this.#parked = kept;
    this.#wake(woken);
  }

  /** The lease's ack was answered: its events are gone. */
  leaseDone(lease: HeldLease): void {
    if (this.#parked.length > 0) this.#parked = this.#parked.filter((parked) => parked.event.lease !== lease);
  }

  /** A drain: no timer any more (the leases drop what they hold). */
  stop(): void {
    this.#stopped = true;
    this.#clock.clearTimeout(this.#timer);
    this.#timerAtMs = Number.POSITIVE_INFINITY;
  }

  #arm(atMs: number): void {
    this.#clock.clearTimeout(this.#timer);
    this.#timerAtMs = atMs;
    this.#timer = this.#clock.setTimeout(() => this.#wakeDue(), Math.max(0, atMs - this.#clock.now()));
  }

  /** Retry times that came: those events may start (if their breakers let them). */
  #wakeDue(): void {
    this.#timer = undefined;
    this.#timerAtMs = Number.POSITIVE_INFINITY;
    const now = this.#clock.now();
    let next = Number.POSITIVE_INFINITY;
    const woken: LeaseEvent[] = [];
    const kept: Parked[] = [];
    for (const parked of this.#parked) {
      if (parked.event.ended) continue;
      if (parked.blocked.reason === 'retry' && parked.blocked.untilMs <= now) woken.push(parked.event);
      else {
        kept.push(parked);
        if (parked.blocked.reason === 'retry') next = Math.min(next, parked.blocked.untilMs);
      }
    }
    this.#parked = kept;
    if (next !== Number.POSITIVE_INFINITY && !this.#stopped) this.#arm(next);
    this.#wake(woken);
  }
}
