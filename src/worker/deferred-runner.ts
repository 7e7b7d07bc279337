import type { Logger } from 'pino';
import type { DeferredRun, DeferredRuns } from '../idempotency/deferred.js';
import type { LoadedHandler } from '../handlers/loader.js';
import type { Clock } from '../runtime/clock.js';
import type { AckResponse, LeaseBatch } from '../types.js';
import type { Breakers } from './breakers.js';
import { HeldLease } from './held-lease.js';
import type { LeaseContext } from './lease-view.js';
import type { Scheduler } from './scheduler.js';
import { WorkerSlot } from './worker-ids.js';

export interface DeferredRunnerOptions {
  deferred: DeferredRuns;
  scheduler: Scheduler;
  context: LeaseContext;
  breakers: Breakers;
  /** The handlers by name (a deferred run of a handler no longer loaded waits for a process that has it). */
  handlers: ReadonlyMap<string, LoadedHandler>;
  /** Unique to the process: its leases' claim owners start with it. */
  ownerPrefix: string;
  clock: Clock;
  logger: Logger;
  /** The store holds no deferred run any more, and none is running. */
  onIdle?(): void;
  /** How often the store is asked for due runs that no timer of this process knows of (other replicas', a restart's). */
  pollMs?: number;
}

/** Runs taken at most per lease: a lease of the deferred runner is one claim and one removal in the store. */
const MAX_LEASE_RUNS = 100;
/** Budget full, or more due than taken: look again this soon. */
const AGAIN_MS = 50;
const DEFAULT_POLL_MS = 1_000;
const ERROR_BACKOFF_MAX_MS = 30_000;

/**
 * Starts deferred runs when they are due (docs/architecture.md, "Deferred runs"): the heads of their
 * chains whose retry time came and whose handler's breaker is not open, taken from the store in
 * leases no larger than the free places of the budget. Each is a HeldLease of its own (its
 * events each routed to their one handler, claimed and recorded as any lease's runs are; the
 * scheduler starts them first), whose "ack" removes from the store the runs that ended: done,
 * duplicate or dead-lettered. A run that fails again is deferred again by its HandlerRun; one cut by
 * a drain or whose key another process holds stays as it was. Wakes at the earliest due time it
 * knows, when this process defers a run, when a breaker changes, and every `pollMs`.
 */
export class DeferredRunner {
  readonly #o: DeferredRunnerOptions;
  readonly #pollMs: number;
  /** Keys of runs in a lease now: not taken again until it ends. */
  readonly #running = new Set<string>();
  #timer: unknown = undefined;
  #timerAtMs = Number.POSITIVE_INFINITY;
  #taking = false;
  #again = false;
  #stopped = false;
  #leases = 0;
  #errorBackoffMs = 0;
  /** The store held deferred runs when last asked. */
  #pending = true;

  constructor(options: DeferredRunnerOptions) {
    this.#o = options;
    this.#pollMs = options.pollMs ?? DEFAULT_POLL_MS;
  }

  /** Looks for due runs now, then keeps looking. */
  start(): void {
    this.#wakeAt(this.#o.clock.now());
  }

  /**
   * A run was deferred until `atMs` (by this process): the store holds one now (the process is not
   * idle, whatever the last look found), and the runner wakes by then.
   */
  runAt(atMs: number): void {
    this.#pending = true;
    this.#wakeAt(atMs);
  }

  /** A breaker changed: its handler's runs may be due now. */
  breakerChanged(): void {
    this.#wakeAt(this.#o.clock.now());
  }

  /** Nothing of the store's runs in a lease now, and none deferred when the store was last asked. */
  get idle(): boolean {
    return this.#running.size === 0 && !this.#pending;
  }

  /** Takes nothing more; the leases running end with the scheduler's drain. */
  stop(): void {
    this.#stopped = true;
    this.#o.clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #wakeAt(atMs: number): void {
    if (this.#stopped || atMs >= this.#timerAtMs) return;
    this.#o.clock.clearTimeout(this.#timer);
    this.#timerAtMs = atMs;
    this.#timer = this.#o.clock.setTimeout(() => this.#wake(), Math.max(0, atMs - this.#o.clock.now()));
    (this.#timer as { unref?: () => void } | undefined)?.unref?.();
  }

  #wake(): void {
    this.#timer = undefined;
    this.#timerAtMs = Number.POSITIVE_INFINITY;
    if (this.#taking) {
      this.#again = true;
      return;
    }
    this.#taking = true;
    this.#take().then(
      (nextAtMs) => this.#taken(nextAtMs),
      (err: unknown) => {
        this.#errorBackoffMs = Math.min(ERROR_BACKOFF_MAX_MS, Math.max(this.#pollMs, this.#errorBackoffMs * 2));
        this.#o.logger.warn({ err, retryInMs: this.#errorBackoffMs }, 'idempotency store failed while reading deferred runs: trying again later');
        this.#taken(this.#o.clock.now() + this.#errorBackoffMs);
      },
    );
  }

  #taken(nextAtMs: number): void {
    this.#taking = false;
    if (this.#again) {
      this.#again = false;
      nextAtMs = this.#o.clock.now();
    }
    this.#wakeAt(nextAtMs);
  }

  /** Takes what is due into one lease; returns when to look again. */
  async #take(): Promise<number> {
    const { deferred, scheduler, breakers } = this.#o;
    const nowMs = this.#o.clock.now();
    const places = Math.min(MAX_LEASE_RUNS, scheduler.freePlaces);
    if (this.#stopped) return Number.POSITIVE_INFINITY;
    if (places === 0) return nowMs + AGAIN_MS;
    const next = await deferred.nextDueAtMs();
    this.#errorBackoffMs = 0;
    this.#setPending(next !== undefined);
    if (next === undefined || next > nowMs) return Math.min(next ?? Number.POSITIVE_INFINITY, nowMs + this.#pollMs);
    const skip = new Set<string>();
    for (const name of this.#o.handlers.keys()) if (breakers.state(name) === 'open') skip.add(name);
    const runs = this.#pick(await deferred.due(nowMs, places + this.#running.size, skip), places);
    if (runs.length > 0) this.#startLease(runs);
    // As many as there were places: more may be due. Else what is due is running already, or its
    // handler's breaker is open: the poll, a lease's end or a breaker's change wakes it.
    return runs.length === places ? nowMs + AGAIN_MS : nowMs + this.#pollMs;
  }

  #setPending(pending: boolean): void {
    if (pending === this.#pending) return;
    this.#pending = pending;
    if (!pending && this.#running.size === 0) this.#o.onIdle?.();
  }

  /** The due runs to start: not running already, their handler loaded, at most one per half-open breaker (its probe). */
  #pick(due: readonly DeferredRun[], places: number): DeferredRun[] {
    const runs: DeferredRun[] = [];
    const probing = new Set<string>();
    for (const run of due) {
      if (runs.length === places) break;
      if (this.#running.has(run.key) || !this.#o.handlers.has(run.handler)) continue;
      if (this.#o.breakers.state(run.handler) === 'half-open') {
        if (probing.has(run.handler)) continue;
        probing.add(run.handler);
      }
      runs.push(run);
    }
    return runs;
  }

  #startLease(runs: readonly DeferredRun[]): void {
    const { context, handlers } = this.#o;
    const n = ++this.#leases;
    const batch: LeaseBatch = { leaseId: `deferred-${n}`, generation: 1, attempt: 1, events: runs.map((run) => run.event) };
    for (const run of runs) this.#running.add(run.key);
    const lease = new HeldLease(context, this.#o.scheduler, batch, DEFERRED_SLOT, this.#o.clock.now(), {
      routes: runs.map((run) => [handlers.get(run.handler) as LoadedHandler]),
      claimOwner: `${this.#o.ownerPrefix}:deferred-${n}`,
      ack: (held) => this.#ended(held, runs),
    });
    this.#o.scheduler.acceptDeferred(lease);
  }

  /** A lease ended: the runs that ended (not deferred again, not cut) leave the store. */
  async #ended(lease: HeldLease, runs: readonly DeferredRun[]): Promise<AckResponse | undefined> {
    const ended: string[] = [];
    for (let i = 0; i < runs.length; i++) {
      const key = (runs[i] as DeferredRun).key;
      this.#running.delete(key);
      if (lease.events[i]?.end === 'settled' && lease.deferredKeys?.has(key) !== true) ended.push(key);
    }
    try {
      if (ended.length > 0) await this.#o.deferred.remove(ended);
    } catch (err) {
      // Left in the store: taken again, they find their done marks (duplicates) and leave then.
      lease.log.warn({ err, runs: ended.length }, 'idempotency store failed while removing deferred runs that ended: they are taken again and found done');
    }
    this.#wakeAt(this.#o.clock.now());
    return { status: 'committed', committed: null };
  }
}

/** The workerId a lease of the deferred runner names in logs and events: it holds no lease of the platform. */
const DEFERRED_SLOT = new WorkerSlot('deferred', 0);
