import type { BreakerChange } from '../observability/worker-events.js';
import type { Clock } from '../runtime/clock.js';
import type { HeldLease, LeaseOwner } from './held-lease.js';
import type { InFlightCounter } from './in-flight.js';
import type { LeaseEvent } from './lease-event.js';
import type { EventEnd, EventPlace } from './lease-view.js';
import { ParkedEvents } from './parked-events.js';
import { SubjectOrder } from './subject-order.js';
import { leaseDeadline } from './timing.js';

/** What the scheduler tells the pull controller. */
export interface SchedulerListener {
  /** A lease was taken in. */
  leaseArrived(): void;
  /** Events started (the buffer shrank): the flow model counts them, and may want a pull. */
  eventsStarted(count: number): void;
  /** A lease's ack is on its way or answered: room in the window, maybe a free workerId. */
  leaseLeaving(lease: HeldLease, answered: 'sending' | 'answered' | 'unanswered'): void;
}

/**
 * The process's held leases and the one budget their events share (docs/architecture.md, "Flow
 * control"): at most `maxInProgress` events run at once, each only once the earlier events of its
 * subject, in any lease, settled (SubjectOrder). Events that may start wait in their lease's ready
 * queue; the oldest lease's start first, so that leases end, and free their share of the consumer's
 * window, in the order they came.
 */
export class Scheduler implements LeaseOwner {
  readonly #maxInProgress: number;
  readonly #inFlight: InFlightCounter;
  readonly #listener: SchedulerListener;
  readonly #clock: Clock;
  readonly #order = new SubjectOrder<LeaseEvent>();
  /** Held leases in arrival order, until their ack is answered. */
  readonly #leases: HeldLease[] = [];
  #running = 0;
  #queued = 0;
  /** Events that ran, failed, and wait in their lease for their retry time (a store without deferred runs). */
  #retrying = 0;
  #unacked = 0;
  /** Leases of the deferred runner among `#leases`. */
  #deferredLeases = 0;
  /** Events that may not start yet: a retry time, or an open breaker. */
  readonly #parked: ParkedEvents;
  #pumping = false;
  /** An event became ready while pumping: look again. */
  #again = false;
  #draining = false;
  #onEmpty: (() => void) | undefined;

  constructor(options: { maxInProgress: number; inFlight: InFlightCounter; listener: SchedulerListener; clock: Clock }) {
    this.#maxInProgress = options.maxInProgress;
    this.#inFlight = options.inFlight;
    this.#listener = options.listener;
    this.#clock = options.clock;
    this.#parked = new ParkedEvents((events) => this.#unpark(events), options.clock);
  }

  /** Leases held: pulled and not yet acknowledged (an ack on its way included). */
  get held(): number {
    return this.#leases.length - this.#deferredLeases;
  }

  /** Events queued: leased and not started (nor given up). */
  get queued(): number {
    return this.#queued;
  }

  /** Events leased and not started that a retry time or a breaker does not hold back (the flow model counts these). */
  get runnable(): number {
    return this.#queued - this.#parked.waiting;
  }

  /** Places free in the budget now (the deferred runner takes no more runs than these). */
  get freePlaces(): number {
    return this.#draining ? 0 : Math.max(0, this.#maxInProgress - this.#running);
  }

  /** Events of held leases whose ack has not been sent. */
  get unacked(): number {
    return this.#unacked;
  }

  /**
   * Takes a lease just pulled (`pullSentAtMs`: when its pull was sent; `earlierPullsAnswered`: no
   * pull sent before it is still on its way).
   */
  accept(lease: HeldLease, pullSentAtMs: number, earlierPullsAnswered = true): void {
    this.#leases.push(lease);
    const count = lease.events.length;
    this.#queued += count;
    this.#unacked += count;
    lease.start(() => this.#claimed(lease));
    if (this.#draining) lease.stop(undefined);
    else {
      const order = this.#order;
      if (order.fenced > 0) {
        const ids = new Set(lease.events.map((event) => event.eventId));
        const newWorkPulledAtMs = lease.pulled.attempt === 1 && earlierPullsAnswered ? pullSentAtMs : undefined;
        order.admitLease((id) => ids.has(id), newWorkPulledAtMs, this.#clock.now() - lease.context.visibilitySeconds * 1_000);
      }
      for (const event of lease.events) {
        const entry = order.enter(event);
        if (entry === 'fenced') event.drop();
        else if (entry === 'ready') lease.enqueueReady(event.index);
      }
    }
    this.#listener.leaseArrived();
    this.pump();
  }

  /** Takes a lease of the deferred runner: chain heads, ready at once, outside the window and the subject order, first in line. */
  acceptDeferred(lease: HeldLease): void {
    this.#leases.unshift(lease);
    this.#deferredLeases++;
    lease.start(() => this.pump());
    if (this.#draining) lease.stop(undefined);
    else for (const event of lease.events) lease.enqueueReady(event.index);
    this.pump();
  }

  /** A lease's claims are stored: its events whose previous event runs chain on it, then what may start starts. */
  #claimed(lease: HeldLease): void {
    if (!this.#draining && !lease.stopped) {
      for (const event of lease.events) {
        const previous = event.subjectLink.prev;
        if (previous !== undefined && (previous.running || previous.isChained)) event.chainOn(previous);
      }
    }
    this.pump();
  }

  /** Whether a held lease came through this workerId (it is the lease's until its ack is answered). */
  holdsLeaseOf(slot: unknown): boolean {
    return this.#leases.some((lease) => lease.slot === slot);
  }

  /** Starts every event that may start, oldest lease first, while the budget has room. */
  pump(): void {
    if (this.#pumping) {
      this.#again = true;
      return;
    }
    this.#pumping = true;
    let started = 0;
    try {
      do {
        this.#again = false;
        started += this.#startReady();
      } while (this.#again && this.#running < this.#maxInProgress);
    } finally {
      this.#pumping = false;
    }
    if (started > 0) this.#listener.eventsStarted(started);
  }

  /** One pass over the leases, oldest first: starts what may start while the budget has room. */
  #startReady(): number {
    let started = 0;
    const now = this.#clock.now();
    for (let i = 0; i < this.#leases.length && this.#running < this.#maxInProgress;) {
      const lease = this.#leases[i] as HeldLease;
      if (!lease.claimed || lease.stopped || !lease.hasReady) {
        i++;
        continue;
      }
      // Past its deadline before its timer fired (a busy turn): nothing of it starts, it would
      // only fail at once for want of time; its events stay unstarted and the lease is requeued.
      if (now >= lease.deadlineMs) {
        lease.stop(leaseDeadline());
        i++;
        continue;
      }
      const event = lease.nextReady() as LeaseEvent;
      if (event.ended) continue;
      const blocked = event.admit(now);
      if (blocked !== undefined) {
        this.#parked.park(event, blocked);
        continue;
      }
      this.#running++;
      if (event.isRetrying) this.#retrying--;
      else if (lease.inWindow) this.#queued--;
      started++;
      this.#inFlight.add(1);
      event.start();
      this.#chainBehind(event);
    }
    return started;
  }

  /**
   * Chains the held events of its subject behind `event` (running), as far as each may be
   * (LeaseEvent.chainOn): past those chained already, up to the first that cannot be.
   */
  #chainBehind(event: LeaseEvent): void {
    for (
      let previous = event, next = event.subjectLink.next;
      next !== undefined && (next.isChained || next.chainOn(previous));
      previous = next, next = next.subjectLink.next
    );
  }

  /**
   * Counts a chained event as started (its run started where it was chained: the one before it
   * settled, or it could not be withdrawn), and chains what follows it that could not be chained yet.
   */
  chainedStarted(event: LeaseEvent): void {
    this.#running++;
    this.#queued--;
    this.#inFlight.add(1);
    this.#listener.eventsStarted(1);
    event.takeChained();
    // Most of its chain was chained already; what could not be then (its lease was not claimed) may be now.
    if (event.running && !this.#draining) this.#chainBehind(event);
  }

  /** A running event failed and waits in its lease for its retry time: its place in the budget is free meanwhile. */
  eventRetrying(event: LeaseEvent): void {
    this.#running--;
    this.#inFlight.add(-1);
    this.#retrying++;
    this.#parked.park(event, { reason: 'retry', handler: '', untilMs: event.retryAtMs });
    this.pump();
  }

  /** A handler's breaker changed: the events it held back may start (ParkedEvents says which). */
  breakerChanged(change: BreakerChange): void {
    this.#parked.breakerChanged(change);
  }

  /** Parked events whose wait is over go back to their lease's ready queue. */
  #unpark(events: readonly LeaseEvent[]): void {
    for (const event of events) if (!event.ended && !event.lease.stopped) event.lease.enqueueReady(event.index);
    this.pump();
  }

  /** An event ended (its lease reports it, then counts it and calls `pump`): its places are freed. */
  eventEnded(event: LeaseEvent, end: EventEnd, place: EventPlace): void {
    if (place === 'running') {
      this.#running--;
      this.#inFlight.add(-1);
    } else if (place === 'retrying') this.#retrying--;
    else if (!event.lease.runsChainHeads) this.#queued--;
    if (event.subjectLink.linked) {
      if (end === 'settled') {
        const next = this.#order.settled(event);
        // A chained one takes the place in the budget this one frees: the budget holds.
        if (next !== undefined) {
          if (next.isChained) this.chainedStarted(next);
          else if (!next.running) next.lease.enqueueReady(next.index);
        }
      } else {
        // The events of its subject behind it must not overtake it: they end unstarted (and their
        // leases are acked failed). A drain needs no fence: nothing is pulled after it.
        for (const dropped of this.#order.broken(event, !this.#draining)) dropped.drop();
      }
    }
  }

  ackSending(lease: HeldLease): void {
    if (!lease.inWindow) return;
    this.#unacked -= lease.events.length;
    this.#listener.leaseLeaving(lease, 'sending');
  }

  leaseDone(lease: HeldLease, answer: 'answered' | 'unanswered'): void {
    const at = this.#leases.indexOf(lease);
    if (at !== -1) this.#leases.splice(at, 1);
    if (!lease.inWindow) this.#deferredLeases--;
    this.#parked.leaseDone(lease);
    // Without an answer the platform keeps the lease until it expires, then redelivers it.
    this.#order.released(lease, answer === 'answered' ? this.#clock.now() : lease.expiresAtMs);
    if (lease.inWindow) this.#listener.leaseLeaving(lease, answer);
    if (this.#leases.length === 0) this.#onEmpty?.();
  }

  /** Drain: nothing starts any more; leases with nothing running are acked (failed) at once. */
  drain(): void {
    this.#draining = true;
    this.#parked.stop();
    for (const lease of [...this.#leases]) lease.stop(undefined);
  }

  /** Resolves once no lease is held. */
  whenEmpty(): Promise<void> {
    if (this.#leases.length === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const previous = this.#onEmpty;
      this.#onEmpty = () => {
        this.#onEmpty = previous;
        previous?.();
        resolve();
      };
    });
  }
}
