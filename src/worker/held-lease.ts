import { setMaxListeners } from 'node:events';
import type { Logger } from 'pino';
import type { LeaseDispatch } from '../dispatch/types.js';
import { AbortedError } from '../errors.js';
import type { LoadedHandler } from '../handlers/loader.js';
import type { ClaimState, FailureHistory } from '../idempotency/store.js';
import { atDeadline, whenAborted, type Watch } from '../runtime/abort-fanout.js';
import { Fifo } from '../runtime/fifo.js';
import { waitUntil } from '../runtime/wait-until.js';
import { NOOP_TRACER, type LeaseTrace } from '../tracing/run-tracer.js';
import type { AckResponse, AckStatus, JobContext, LeaseBatch } from '../types.js';
import { DoneMarkWriter } from './done-marks.js';
import { acknowledgeLease } from './lease-ack.js';
import { warnNearDeadline } from './lease-warnings.js';
import { LeaseEvent } from './lease-event.js';
import { chainsOf, jobContextOf, layOutKeys, newKeysOf } from './lease-keys.js';
import type { EventEnd, EventPlace, LeaseContext, LeaseView } from './lease-view.js';
import { leaseDeadline, safetyMarginMs, STRAGGLER_GRACE_MS } from './timing.js';
import type { WorkerSlot } from './worker-ids.js';

/** Where a held lease reports to: the scheduler. An event's end takes one path: LeaseEvent -> its HeldLease -> this owner. */
export interface LeaseOwner {
  /** An event ended (`place`: where it was then): its places in the budget and the subject order are freed; the lease then counts it and calls `pump`. */
  eventEnded(event: LeaseEvent, end: EventEnd, place: EventPlace): void;
  /** Starts what may start now. */
  pump(): void;
  /** A running event failed and waits in its lease to run the failed handlers again at `event.retryAtMs`. */
  eventRetrying(event: LeaseEvent): void;
  /** A chained event being dropped had started already where its run was chained: it counts as running. */
  chainedStarted(event: LeaseEvent): void;
  /** The lease's ack is about to be sent: its events leave the window as the platform serves it. */
  ackSending(lease: HeldLease): void;
  /** The lease's ack was answered (or given up): its workerId is free. */
  leaseDone(lease: HeldLease, answer: 'answered' | 'unanswered'): void;
}

/** A lease of the deferred runner (deferred-runner.ts): each event's one handler, its claim owner, and what it does instead of an ack. */
export interface HeldLeaseOptions {
  routes: (readonly LoadedHandler[])[];
  claimOwner: string;
  ack(lease: HeldLease, sent: AckStatus): Promise<AckResponse | undefined>;
}

const RUNNING = 0;
const ENDING = 1;
const ACKING = 2;
const DONE = 3;

/**
 * One lease from its pull to its ack (docs/architecture.md, "One lease, from pull to ack"): its events
 * and their `<handler>:<event id>` keys, claimed in one store call; its deadline (the lease expiry
 * minus a safety margin: unfinished work is aborted and acked `failed` while the lease is still
 * valid, spec: an expired lease is redelivered with a higher generation); its done marks and claim
 * releases, stored before the ack; and the ack, `ok` when every event settled, else `failed` (the
 * platform requeues the lease at once). Its events start when the scheduler says so.
 */
export class HeldLease implements LeaseView {
  readonly context: LeaseContext;
  readonly owner: LeaseOwner;
  readonly pulled: LeaseBatch;
  readonly slot: WorkerSlot;
  readonly workerId: string;
  /** When its pull was sent: the lease is counted from then (its answer came later). */
  readonly pulledAtMs: number;
  readonly expiresAtMs: number;
  readonly deadlineMs: number;
  readonly claimOwner: string;
  readonly log: Logger;
  readonly events: LeaseEvent[];
  readonly keys: string[];
  readonly keyStart: Int32Array;
  readonly routes: (readonly LoadedHandler[])[];
  readonly jobContext: JobContext;
  readonly doneMarks: DoneMarkWriter;
  readonly dispatch: LeaseDispatch;
  /** Its spans: the receive span (made now, the pull answered), then process and settle. */
  readonly trace: LeaseTrace;
  /** A lease of the deferred runner: its events are chain heads, it is not in the platform's window. */
  readonly runsChainHeads: boolean;
  readonly deferredKeys: Set<string> | undefined;
  readonly #ack: HeldLeaseOptions['ack'];
  /** Events that may start (the first of their subject), in the order they became so. */
  readonly #ready = new Fifo<LeaseEvent>();
  #claims: readonly ClaimState[] = [];
  #failures: readonly (FailureHistory | undefined)[] | undefined = undefined;
  #claimed = false;
  #deferredChains: ReadonlySet<string> | undefined = undefined;
  #stopped = false;
  #abort = new AbortController();
  #claiming: Promise<void> = Promise.resolve();
  #pendingWrites: Promise<unknown>[] = [];
  #phase = RUNNING;
  #ended = 0;
  #settled = 0;
  #stragglerTimer: unknown = undefined;
  #watches: Watch[] = [];

  constructor(context: LeaseContext, owner: LeaseOwner, batch: LeaseBatch, slot: WorkerSlot, pulledAtMs: number, options?: HeldLeaseOptions) {
    this.context = context;
    this.owner = owner;
    this.pulled = batch;
    this.slot = slot;
    this.workerId = slot.id;
    this.pulledAtMs = pulledAtMs;
    const visibilityMs = context.visibilitySeconds * 1_000;
    this.expiresAtMs = pulledAtMs + visibilityMs;
    this.deadlineMs = this.expiresAtMs - safetyMarginMs(visibilityMs);
    this.claimOwner = options?.claimOwner ?? `${slot.id}:${batch.leaseId}:${batch.generation}`;
    this.runsChainHeads = options !== undefined;
    this.deferredKeys = options === undefined ? undefined : new Set();
    this.#ack = options?.ack ?? acknowledgeLease;
    this.log = context.logger.child({ workerId: slot.id, leaseId: batch.leaseId, generation: batch.generation, deliveryAttempt: batch.attempt });
    this.jobContext = jobContextOf(batch, slot.id, this.deadlineMs);
    this.doneMarks = new DoneMarkWriter(context.store, this.log, this.#pendingWrites, (err) => context.storeFailed(err));
    // Every handler run in flight listens to the lease's signal.
    setMaxListeners(0, this.#abort.signal);
    this.dispatch = context.dispatcher.open(this.#abort.signal);
    this.trace = (context.tracer ?? NOOP_TRACER).received({ workerId: slot.id, pulled: batch, pulledAtMs });

    const layout = layOutKeys(batch.events, (event, i) => options?.routes[i] ?? context.router.route(event.type));
    this.routes = layout.routes;
    this.keys = layout.keys;
    this.keyStart = layout.keyStart;
    this.events = batch.events.map((event, i) => new LeaseEvent(this, event, i));
  }

  /** Aborts at the deadline or at forced shutdown: every run of the lease listens to it. */
  get signal(): AbortSignal {
    return this.#abort.signal;
  }

  get settledEvents(): number {
    return this.#settled;
  }

  get claims(): readonly ClaimState[] {
    return this.#claims;
  }

  get failures(): readonly (FailureHistory | undefined)[] | undefined {
    return this.#failures;
  }

  get claimed(): boolean {
    return this.#claimed;
  }

  get deferredChains(): ReadonlySet<string> | undefined {
    return this.#deferredChains;
  }

  get stopped(): boolean {
    return this.#stopped;
  }

  /** Some event may start: the scheduler takes them with `nextReady`. */
  get hasReady(): boolean {
    return this.#ready.size > 0;
  }

  /** A lease of the platform (not a lease of the deferred runner): its events count in the consumer's window. */
  get inWindow(): boolean {
    return !this.runsChainHeads;
  }

  /** Ack not sent yet: its events count in the consumer's window. */
  get unacked(): boolean {
    return this.#phase < ACKING;
  }

  /**
   * Claims its keys (one store call) and arms its deadline; `onClaimed` once its events may start.
   * A claim that fails leaves every event unstarted: the lease is acked `failed` and comes back. An
   * empty lease is acked at once.
   */
  start(onClaimed: () => void): void {
    this.#watches.push(
      // On the timer the lease's runs share for this deadline (run-handler.ts), and first on it: a
      // run's own deadline callback never fires before the lease has stopped starting events (on a
      // timer of its own, one could fire first, and the next event started in that moment failed at
      // once, 'no time left', counting as a failed attempt instead of staying unstarted).
      atDeadline(this.context.clock, this.deadlineMs, () => this.stop(leaseDeadline())),
      whenAborted(this.context.forceSignal, () => this.stop(new AbortedError('forced shutdown'))),
      // Runs end by the deadline on their own; this bounds the wait for one that cannot report.
      whenAborted(this.#abort.signal, () => (this.#stragglerTimer = this.context.clock.setTimeout(() => this.#abandonRunning(), STRAGGLER_GRACE_MS))),
    );
    if (this.events.length === 0) {
      void this.#finish();
      return;
    }
    if (this.keys.length === 0) {
      this.#claimed = true;
      return onClaimed();
    }
    // Awaited before the ack: the claims of what did not run are released with it.
    const { store, deferred } = this.context;
    // Which of its (handler, subject) chains hold deferred runs is read beside the claim (deferral.ts).
    const chains = deferred === undefined || this.runsChainHeads ? undefined : deferred.chainsWithRuns(chainsOf(this, this.pulled.events));
    this.#claiming = this.trace
      .call('idempotency claim', () => Promise.all([store.claim(this.keys, this.claimOwner, Math.max(1, this.expiresAtMs - this.context.clock.now())), chains]))
      .then(
        ([result, deferredChains]) => {
          this.#claims = result.states;
          this.#failures = result.failures;
          if (deferredChains !== undefined && deferredChains.size > 0) this.#deferredChains = deferredChains;
          this.#claimed = true;
          this.context.storeAnswered();
          onClaimed();
        },
        (err: unknown) => {
          this.log.error({ err }, 'idempotency store claim failed: the lease is requeued and the process backs off');
          // The claim may have gone through with its answer lost: given back once the store answers.
          this.context.claimsLost?.(this.keys, this.claimOwner);
          this.context.storeFailed(err);
          this.stop(undefined);
        },
      );
  }

  /**
   * No event starts any more: those waiting end unstarted. With a reason the running ones are aborted
   * too (the deadline, a forced shutdown); without one (a drain, a failed claim) they may finish.
   */
  stop(reason: Error | undefined): void {
    this.#stopped = true;
    if (reason !== undefined && !this.#abort.signal.aborted) this.#abort.abort(reason);
    for (const event of this.events) event.drop();
  }

  /** An event ended: the owner frees its places, and the lease ends once every event has. */
  eventEnded(index: number, end: EventEnd, place: EventPlace): void {
    this.owner.eventEnded(this.events[index] as LeaseEvent, end, place);
    if (end === 'settled') this.#settled++;
    if (++this.#ended === this.events.length && this.#phase === RUNNING) void this.#finish();
    this.owner.pump();
  }

  eventRetrying(index: number): void {
    this.owner.eventRetrying(this.events[index] as LeaseEvent);
  }

  chainedStarted(index: number): void {
    this.owner.chainedStarted(this.events[index] as LeaseEvent);
  }

  enqueueReady(index: number): void {
    this.#ready.push(this.events[index] as LeaseEvent);
  }

  /** The next event that may start, in the order they became ready; undefined when none is. */
  nextReady(): LeaseEvent | undefined {
    return this.#ready.shift();
  }

  /** Claims given back with the ack (or at once when nothing else waits): a redelivery finds them free. */
  release(keys: string[]): void {
    if (keys.length === 0) return;
    this.#track(this.context.store.release(keys, this.claimOwner), 'releasing claims', keys.length);
  }

  #track(write: Promise<unknown>, what: string, keys: number): void {
    this.#pendingWrites.push(
      write.catch((err: unknown) => {
        this.log.error({ err, keys }, `idempotency store: ${what} failed (they free at the lease expiry)`);
      }),
    );
  }

  /** A run that cannot report past the deadline's grace counts as failed: the lease stops waiting. */
  #abandonRunning(): void {
    for (const event of this.events) event.abandon();
  }

  async #finish(): Promise<void> {
    this.#phase = ENDING;
    if (this.#stragglerTimer !== undefined) this.context.clock.clearTimeout(this.#stragglerTimer);
    for (const watch of this.#watches) watch.cancel();
    this.dispatch.close();
    await this.#claiming;
    const allSettled = this.#settled === this.events.length;
    // Cut at its deadline, not by a forced shutdown: say which knob to turn (below).
    const hitDeadline = !this.context.forceSignal.aborted && !allSettled && (this.#abort.signal.aborted || this.context.clock.now() >= this.deadlineMs);
    // Events that never started keep the claims the lease took: released with the `failed` ack, else
    // the redelivery (another owner) finds them busy until this lease would have expired.
    this.release(this.events.filter((event) => event.end === 'unstarted').flatMap((event) => newKeysOf(this, this.#claims, event.index)));
    const sent: AckStatus = allSettled ? 'ok' : 'failed';
    const settle = this.trace.settle(sent);
    // Done marks and releases are stored before the ack: after an `ok` the events are gone.
    this.doneMarks.flushForAck();
    await settle.call('idempotency writes', () => waitUntil(Promise.all(this.#pendingWrites), this.expiresAtMs - this.context.clock.now()));
    this.#phase = ACKING;
    this.owner.ackSending(this);
    const response = await this.#ack(this, sent);
    settle.end(response === undefined ? 'error' : response.status);
    this.#phase = DONE;
    this.owner.leaseDone(this, response === undefined ? 'unanswered' : 'answered');
    if (this.inWindow) warnNearDeadline(this, hitDeadline);
  }
}
