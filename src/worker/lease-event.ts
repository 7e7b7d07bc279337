import type { LoadedHandler } from '../handlers/loader.js';
import type { CloudEvent } from '../types.js';
import type { Blocked } from './breakers.js';
import { admitEvent, chainableHandler, failuresBefore } from './admission.js';
import { runWait } from './deferral.js';
import { HandlerRun } from './handler-run.js';
import type { EventEnd, EventPlace, LeaseView, RunEnd, RunOwner } from './lease-view.js';
import { SubjectLink, type ChainedEvent } from './subject-order.js';

const WAITING = 0;
const RUNNING = 1;
const ENDED = 2;
/** Not started as far as the scheduler knows, but its run is chained on the previous event's (chainOn). */
const CHAINED = 3;
/** Ran, some handler failed, and it runs those again in this lease when their retry time comes. */
const RETRYING = 4;

/**
 * One event of a held lease: its place in its subject's chain (SubjectOrder), its handler runs (one
 * per matching handler, all started together), and how it ended. Reports its end once, to the lease.
 *
 * A failed run whose retry time comes while the lease still has time left (a quarter of its
 * visibility before its deadline) does not end the event: it waits in the lease (`retrying`, first
 * of its subject, so the events behind it keep waiting) and runs the failed handlers again; the
 * lease is acked once it ends. Otherwise the event ends failed, and the lease is acked `failed`.
 */
export class LeaseEvent implements ChainedEvent<LeaseEvent>, RunOwner {
  readonly lease: LeaseView;
  readonly event: CloudEvent;
  /** Its position in the lease: its keys are the lease's keys[keyStart[index] .. keyStart[index + 1]). */
  readonly index: number;
  readonly subjectLink = new SubjectLink<LeaseEvent>();
  #state = WAITING;
  #end: EventEnd | undefined = undefined;
  #handlersLeft = 0;
  /** Positions (in the lease's keys) of its runs that failed and may run again, once one did. */
  #failed: number[] | undefined = undefined;
  /** One of its runs was deferred to the store (it counts as settled here). */
  #deferredSome = false;
  /** A failed run that may not run again in this lease (no retry time, or too late): the event ends failed. */
  #failedForGood = false;
  /** The latest retry time of its failed runs. */
  #retryAtMs = 0;
  /** Positions of the runs the next start runs: all the route's first, then the failed ones. */
  #toRun: number[] | undefined = undefined;
  /** Positions (in the lease's keys) of its runs that ended unstarted, once one did. */
  #unstarted: number[] | undefined = undefined;
  /** Its one run, while it is handed to the dispatcher (a follower may chain on it), or chained itself. */
  #soleRun: HandlerRun | undefined = undefined;
  /** How its chained run ended before the scheduler took it as started (CHAINED). */
  #chainedEnd: RunEnd | undefined = undefined;

  constructor(lease: LeaseView, event: CloudEvent, index: number) {
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
  get holder(): LeaseView {
    return this.lease;
  }

  get running(): boolean {
    return this.#state === RUNNING;
  }

  /** Its run is chained on the previous event's (chainOn); the scheduler takes it as started when that one settles. */
  get isChained(): boolean {
    return this.#state === CHAINED;
  }

  /** Failed runs wait for their retry time in this lease. */
  get isRetrying(): boolean {
    return this.#state === RETRYING;
  }

  get ended(): boolean {
    return this.#state === ENDED;
  }

  /** How it ended, once it has. */
  get end(): EventEnd | undefined {
    return this.#end;
  }

  /** When its failed runs may run again (retrying). */
  get retryAtMs(): number {
    return this.#retryAtMs;
  }

  /** Undefined when its runs may start now; else what holds it back (admission.ts). */
  admit(nowMs: number): Blocked | undefined {
    return admitEvent(this.lease, this.index, this.#toRun, nowMs);
  }

  /** The failures of `handler`'s run on it so far (for picking a breaker's probe). */
  failuresOf(handler: string): number {
    return failuresBefore(this.lease, this.index, handler) + (this.#state === RETRYING ? 1 : 0);
  }

  /** Starts its runs (the budget, the subject order, its retry time and the breakers let it): every matching handler's, or on a retry the failed ones'. */
  start(): void {
    const lease = this.lease;
    const first = lease.keyStart[this.index] as number;
    const route = lease.routes[this.index] ?? [];
    const retry = this.#toRun;
    this.#state = RUNNING;
    this.#toRun = undefined;
    if (retry !== undefined) {
      this.#handlersLeft = retry.length;
      for (const k of retry) new HandlerRun(this, route[k - first] as LoadedHandler, k, true).start();
      return;
    }
    if (route.length === 0) {
      // No handler is interested: nothing to do, and nothing to retry.
      lease.log.debug({ eventId: this.event.id, type: this.event.type }, 'no handler for this event type');
      lease.context.events.emit('run:done', { workerId: lease.workerId, event: this.event, handler: undefined, outcome: 'ok', durationMs: 0 });
      return this.#finish('settled');
    }
    this.#handlersLeft = route.length;
    const nowMs = lease.context.deferred === undefined ? 0 : lease.context.clock.now();
    for (let j = 0; j < route.length; j++) {
      const run = new HandlerRun(this, route[j] as LoadedHandler, first + j);
      // A run that must wait is deferred (only its own chain waits); the others run now.
      const wait = nowMs === 0 ? undefined : runWait(lease, first + j, route[j] as LoadedHandler, this.subject, nowMs);
      if (wait !== undefined) run.defer(wait);
      else {
        // The next event of its subject may be chained on a sole run (chainOn).
        if (route.length === 1) this.#soleRun = run;
        run.start();
      }
    }
  }

  /**
   * Chains its run on `previous`'s, the event before it in its subject, running or chained itself:
   * where the dispatcher offers it (threads), it starts the moment that one ends ok, without a
   * round trip through the main thread (docs/architecture.md, "Processes and threads"), when
   * `chainableHandler` allows it; false when it does not chain.
   */
  chainOn(previous: LeaseEvent): boolean {
    const lease = this.lease;
    const leader = previous.#soleRun;
    if (this.#state !== WAITING || (previous.#state !== RUNNING && previous.#state !== CHAINED) || leader === undefined || !leader.dispatched) return false;
    const handler = chainableHandler(lease, this.index, this.subject);
    if (handler === undefined) return false;
    const run = new HandlerRun(this, handler, lease.keyStart[this.index] as number);
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
    if (ended !== undefined) this.handlerEnded(this.lease.keyStart[this.index] as number, ended, undefined);
  }

  /**
   * Its previous event will run again later (it retries): a run chained on it never starts there.
   * Back to waiting behind it, when the run can be taken back; false when it had started already.
   */
  unchain(): boolean {
    if (this.#state !== CHAINED) return true;
    const run = this.#soleRun as HandlerRun;
    if (this.#chainedEnd !== 'unstarted' && !run.withdraw()) return false;
    this.#state = WAITING;
    this.#soleRun = undefined;
    this.#chainedEnd = undefined;
    return true;
  }

  /** One of its runs ended (HandlerRun); a failed one says when it may run again, if it may. */
  handlerEnded(k: number, outcome: RunEnd, retryAtMs: number | undefined): void {
    if (this.#state === CHAINED) {
      this.#chainedEnd = outcome;
      return;
    }
    if (this.#state !== RUNNING) return;
    if (outcome === 'deferred') this.#deferredSome = true;
    else if (outcome === 'unstarted') (this.#unstarted ??= []).push(k);
    else if (outcome === 'failed') {
      if (retryAtMs === undefined) this.#failedForGood = true;
      else {
        (this.#failed ??= []).push(k);
        this.#retryAtMs = Math.max(this.#retryAtMs, retryAtMs);
      }
    }
    if (--this.#handlersLeft > 0) return;
    this.#soleRun = undefined;
    const unstarted = this.#unstarted;
    const failed = this.#failed;
    this.#unstarted = this.#failed = undefined;
    if (unstarted === undefined) {
      if (failed === undefined && !this.#failedForGood) {
        // A deferred run did not end ok here: runs chained on it would never start; they wait again.
        if (this.#deferredSome) this.#unchainFollowers();
        return this.#finish('settled');
      }
      if (!this.#failedForGood && this.#mayRetryHere()) return this.#retryLater(failed as number[]);
      return this.#finish('failed');
    }
    // Some runs never started: the event is retried as a whole. When none of them ran, the lease
    // releases the claims it took with its ack (as for an event never started); the others go back now.
    const lease = this.lease;
    const allUnstarted = unstarted.length === (lease.routes[this.index] ?? []).length && failed === undefined && !this.#failedForGood;
    lease.release(unstarted.filter((k) => !allUnstarted || lease.claims[k] !== 'new').map((k) => lease.keys[k] as string));
    this.#finish(allUnstarted ? 'unstarted' : 'failed');
  }

  /**
   * Ends it without running it (drain, deadline, an earlier event of its subject failed, a fenced
   * subject). A chained run that has started already cannot be: the event runs (`owner.chainedStarted`).
   * One waiting for a retry ends failed (it ran and failed in this lease).
   */
  drop(): void {
    if (this.#state === CHAINED) {
      const end = this.#chainedEnd;
      if (end === 'unstarted' || (end === undefined && (this.#soleRun as HandlerRun).withdraw())) {
        this.#state = WAITING;
        return this.#finish('unstarted');
      }
      return this.lease.chainedStarted(this.index);
    }
    if (this.#state === RETRYING) return this.#finish('failed');
    if (this.#state !== WAITING) return;
    this.#finish('unstarted');
  }

  /** Gives up on it while it runs (the lease stopped waiting for it): it counts as failed. */
  abandon(): void {
    if (this.#state !== RUNNING) return;
    this.#finish('failed');
  }

  /** Its retry comes while the lease has a quarter of its visibility left before its deadline. */
  #mayRetryHere(): boolean {
    const lease = this.lease;
    return !lease.stopped && this.#retryAtMs <= lease.deadlineMs - (lease.context.visibilitySeconds * 1_000) / 4;
  }

  #retryLater(failed: number[]): void {
    this.#state = RETRYING;
    this.#toRun = failed;
    this.#failedForGood = false;
    this.#unchainFollowers();
    this.lease.eventRetrying(this.index);
  }

  /** Runs chained on it would start only after it ended ok there: they go back to waiting behind it. */
  #unchainFollowers(): void {
    for (let next = this.subjectLink.next; next !== undefined && next.isChained; next = next.subjectLink.next) {
      if (!next.unchain()) {
        this.lease.chainedStarted(next.index);
        break;
      }
    }
  }

  #finish(end: EventEnd): void {
    this.#soleRun = undefined;
    const place: EventPlace = this.#state === RUNNING ? 'running' : this.#state === RETRYING ? 'retrying' : 'waiting';
    this.#state = ENDED;
    this.#end = end;
    this.lease.eventEnded(this.index, end, place);
  }
}
