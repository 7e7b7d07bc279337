import type { LoadedHandler } from '../handlers/loader.js';
import type { CloudEvent } from '../types.js';
import type { HeldLease } from './held-lease.js';
import { HandlerRun, type RunOutcome } from './handler-run.js';
import type { ChainedEvent } from './subject-order.js';

/** How an event ended: every handler ok, duplicate or dead-lettered; one failed; or none of them ran. */
export type EventEnd = 'settled' | 'failed' | 'unstarted';

const WAITING = 0;
const RUNNING = 1;
const ENDED = 2;
/** Not started as far as the scheduler knows, but its run is chained on the previous event's (chainOn). */
const CHAINED = 3;

/**
 * One event of a held lease: its place in its subject's chain (SubjectOrder), its handler runs (one
 * per matching handler, all started together), and how it ended. Reports its end once, to the lease.
 */
export class LeaseEvent implements ChainedEvent<LeaseEvent> {
  readonly lease: HeldLease;
  readonly event: CloudEvent;
  /** Its position in the lease: its keys are the lease's keys[keyStart[index] .. keyStart[index + 1]). */
  readonly index: number;
  prevInSubject: LeaseEvent | undefined = undefined;
  nextInSubject: LeaseEvent | undefined = undefined;
  /** Linked into its subject's chain (SubjectOrder.enter said ready or waiting, and it is still there). */
  linked = false;
  #state = WAITING;
  #end: EventEnd | undefined = undefined;
  #handlersLeft = 0;
  #failed = false;
  /** Positions (in the lease's keys) of its runs that ended unstarted, once one did. */
  #unstarted: number[] | undefined = undefined;
  /** Its one run, while it is handed to the dispatcher (a follower may chain on it), or chained itself. */
  #soleRun: HandlerRun | undefined = undefined;
  /** How its chained run ended before the scheduler took it as started (CHAINED). */
  #chainedEnd: RunOutcome | undefined = undefined;

  constructor(lease: HeldLease, event: CloudEvent, index: number) {
    this.lease = lease;
    this.event = event;
    this.index = index;
  }

  get subject(): string {
    return this.event.subject;
  }

  get eventId(): string {
    return this.event.id;
  }

  get sequence(): string {
    return this.event.sequence;
  }

  /** Its lease: a fence it sets lifts after that lease's ack (SubjectOrder). */
  get holder(): HeldLease {
    return this.lease;
  }

  get running(): boolean {
    return this.#state === RUNNING;
  }

  /** Its run is chained on the previous event's (chainOn); the scheduler takes it as started when that one settles. */
  get isChained(): boolean {
    return this.#state === CHAINED;
  }

  get ended(): boolean {
    return this.#state === ENDED;
  }

  /** How it ended, once it has. */
  get end(): EventEnd | undefined {
    return this.#end;
  }

  /** Starts every matching handler's run (the budget and the subject order let it). */
  start(): void {
    const lease = this.lease;
    const first = lease.keyStart[this.index] as number;
    const route = lease.routes[this.index] ?? [];
    this.#state = RUNNING;
    if (route.length === 0) {
      // No handler is interested: nothing to do, and nothing to retry.
      lease.log.debug({ eventId: this.event.id, type: this.event.type }, 'no handler for this event type');
      lease.context.events.emit('event:done', { workerId: lease.workerId, event: this.event, handler: undefined, outcome: 'ok', durationMs: 0 });
      return this.#finish('settled');
    }
    this.#handlersLeft = route.length;
    for (let j = 0; j < route.length; j++) {
      const run = new HandlerRun(this, (route[j] as LoadedHandler).name, first + j);
      // The next event of its subject may be chained on a sole run (chainOn).
      if (route.length === 1) this.#soleRun = run;
      run.start();
    }
  }

  /**
   * Chains its run on `previous`'s, the event before it in its subject, running or chained itself:
   * where the dispatcher offers it (threads), it starts the moment that one ends ok, without a
   * round trip through the main thread (docs/architecture.md, "Processes and threads"). Only for
   * one single-event handler whose claim is new, in a lease that may start events, with tracing off
   * (a process span measures the handler's run, not its wait); false when it does not chain.
   */
  chainOn(previous: LeaseEvent): boolean {
    const lease = this.lease;
    const leader = previous.#soleRun;
    if (this.#state !== WAITING || (previous.#state !== RUNNING && previous.#state !== CHAINED) || leader === undefined || !leader.dispatched) return false;
    if (!lease.claimed || lease.stopped || lease.dispatch.startAfter === undefined || lease.context.tracer?.enabled === true || Date.now() >= lease.deadlineMs) return false;
    const route = lease.routes[this.index] ?? [];
    const k = lease.keyStart[this.index] as number;
    if (route.length !== 1 || (route[0] as LoadedHandler).batch !== undefined || lease.claims[k] !== 'new') return false;
    const run = new HandlerRun(this, (route[0] as LoadedHandler).name, k);
    this.#state = CHAINED;
    this.#soleRun = run;
    run.startAfter(leader);
    return true;
  }

  /**
   * The scheduler takes a chained event as started: its previous event settled (its run most likely
   * started already, where that one ran), or it could not be withdrawn. Ends at once when its run
   * has ended already.
   */
  takeChained(): void {
    if (this.#state !== CHAINED) return;
    this.#state = RUNNING;
    this.#handlersLeft = 1;
    const ended = this.#chainedEnd;
    if (ended !== undefined) this.handlerEnded(this.lease.keyStart[this.index] as number, ended);
  }

  /** One of its runs ended (HandlerRun). */
  handlerEnded(k: number, outcome: RunOutcome): void {
    if (this.#state === CHAINED) {
      this.#chainedEnd = outcome;
      return;
    }
    if (this.#state !== RUNNING) return;
    if (outcome === 'unstarted') (this.#unstarted ??= []).push(k);
    else if (outcome === 'failed') this.#failed = true;
    if (--this.#handlersLeft > 0) return;
    const unstarted = this.#unstarted;
    if (unstarted === undefined) return this.#finish(this.#failed ? 'failed' : 'settled');
    // Some runs never started: the event is retried as a whole. When none of them ran, the lease
    // releases the claims it took with its ack (as for an event never started); the others go back now.
    const lease = this.lease;
    const allUnstarted = unstarted.length === (lease.routes[this.index] ?? []).length;
    lease.release(unstarted.filter((k) => !allUnstarted || lease.claims[k] !== 'new').map((k) => lease.keys[k] as string));
    this.#finish(allUnstarted ? 'unstarted' : 'failed');
  }

  /**
   * Ends it without running it (drain, deadline, an earlier event of its subject failed, a fenced
   * subject). A chained run that has started already cannot be: the event runs (`owner.chainedStarted`).
   */
  drop(): void {
    if (this.#state === CHAINED) {
      const end = this.#chainedEnd;
      if (end === 'unstarted' || (end === undefined && (this.#soleRun as HandlerRun).withdraw())) {
        this.#state = WAITING;
        return this.#finish('unstarted');
      }
      return this.lease.owner.chainedStarted(this);
    }
    if (this.#state !== WAITING) return;
    this.#finish('unstarted');
  }

  /** Gives up on it while it runs (the lease stopped waiting for it): it counts as failed. */
  abandon(): void {
    if (this.#state !== RUNNING) return;
    this.#finish('failed');
  }

  #finish(end: EventEnd): void {
    this.#soleRun = undefined;
    const wasRunning = this.#state === RUNNING;
    this.#state = ENDED;
    this.#end = end;
    this.lease.owner.eventEnded(this, end, wasRunning);
  }
}
