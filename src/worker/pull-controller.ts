import type { PullResult } from '../client/consumer-api.js';
import { isAbortError, isRetryable } from '../client/errors.js';
import type { PullStatusLabel } from '../observability/worker-events.js';
import { HeldLease } from './held-lease.js';
import { configProblem, pullStatusLabel } from './pull-status.js';
import { StoreProbe } from './store-probe.js';
import { DEFAULT_STORE_BACKOFF_MAX_MS, type PullControllerOptions } from './pull-options.js';
import { backoffMs, withJitter } from './timing.js';
import type { WorkerSlot } from './worker-ids.js';

/** Why pulling waits: caught up, paused, throttled (429), failing, or misconfigured. */
type Wait = 'idle' | 'paused' | 'throttled' | 'error' | 'config';

/**
 * The one place that pulls (docs/architecture.md, "Flow control"). It sends a pull whenever the flow
 * model wants one and a workerId is free, and turns every answer into a decision for the whole
 * process: a 200 goes to the scheduler as a held lease; a 204 starts idle polling (one pull at a
 * time); a 409, a 429 (`Retry-After` honoured) or an error is ONE back-off for the process, after
 * which a single pull probes before pulling resumes; a 429 wait also ends when one of this process's
 * acks is answered (its events were room the platform's Retry-After could not count on).
 */
export class PullController {
  readonly #o: PullControllerOptions;
  #stopped = false;
  #wait: Wait | undefined = undefined;
  #waitTimer: unknown = undefined;
  /** After a back-off: one pull at a time until one is answered 200 or 204. */
  #probing = false;
  #idleWaitMs: number;
  #errorStreak = 0;
  /** Pulls sent so far; each cycle knows its own number. */
  #pullsSent = 0;
  /** Numbers of the pulls in flight (a few: at most one per workerId). */
  readonly #outstanding = new Set<number>();
  /** The number of the last pull answered 204, and `#pullsSent` when work last showed up (a lease, an ack's answer). */
  #caughtUpPull = 0;
  #workSeenAtPull = 0;
  #lastConfigProblem: string | undefined = undefined;
  /** The idempotency store failed: after the back-off, one pull at a time until a claim goes through. */
  readonly #store: StoreProbe;
  #pausedLogged = false;
  /** The 'error' wait is the store's back-off (it ends when the store answers). */
  #storeWait = false;
  #onStopped: (() => void) | undefined = undefined;

  constructor(options: PullControllerOptions) {
    this.#o = options;
    this.#idleWaitMs = options.timings.idleMinMs;
    this.#store = new StoreProbe(options.timings.errorBaseMs, Math.min(options.timings.errorMaxMs, DEFAULT_STORE_BACKOFF_MAX_MS));
  }

  /** Pulls in flight. */
  get pulling(): number {
    return this.#outstanding.size;
  }

  /** Sends the pulls the flow model wants now (called on every change that may make room). */
  maybePull(): void {
    if (this.#stopped || (this.#wait !== undefined && this.#wait !== 'idle')) return;
    const { ids, model, scheduler } = this.#o;
    // Every handler's breaker is open: nothing pulled now could run (a half-open one pulls again).
    if (this.#o.leaseContext.breakers.allOpen) return;
    const now = this.#o.clock.now();
    for (;;) {
      const idle = this.#wait === 'idle';
      // Caught up: one poll at a time, after the idle wait; but the ids not pulled with yet go
      // together, at once (a restart gets back every lease it held). After a back-off: one probe.
      if (idle && (this.#waitTimer !== undefined || this.pulling >= Math.max(1, ids.notPulled))) return;
      if (this.#probing && this.pulling >= 1) return;
      if (this.#store.holdsPull(this.pulling)) return;
      const hold = model.holdBack({ held: scheduler.held, pulling: this.pulling, runnable: scheduler.runnable, unacked: scheduler.unacked }, now);
      // A poll must go out to find work: only the ceiling and the window hold it back.
      if (hold !== undefined && (!idle || hold === 'ceiling' || hold === 'window')) return;
      const slot = ids.take(now);
      if (slot === undefined) return;
      const pull = ++this.#pullsSent;
      this.#outstanding.add(pull);
      this.#store.pullSent();
      void this.#cycle(slot, pull);
    }
  }

  /**
   * The idempotency store failed (a claim, a done mark, a failure count): ONE back-off for the
   * process, as for a failing platform, then one pull at a time until a claim goes through. Events
   * that did not run meanwhile spend no attempts.
   */
  storeFailed(err: unknown): void {
    if (this.#stopped) return;
    this.#store.failed();
    if (this.#wait === 'error') return;
    const { waitMs, streak } = this.#store.nextBackOff();
    this.#o.logger.warn({ err, waitMs, errorStreak: streak }, 'idempotency store failed: the process backs off');
    this.#waitFor('error', waitMs);
    this.#storeWait = true;
  }

  /** A claim went through: the store answers again. */
  storeAnswered(): void {
    if (!this.#store.answered()) return;
    this.#o.logger.info('idempotency store answers again: pulling resumes');
    // The store's back-off ends with the store's answer (a claim given back, docs/architecture.md, "Deferred runs").
    if (this.#wait === 'error' && this.#storeWait) this.#endWait();
    else this.maybePull();
  }

  /** A lease's ack was answered: a 429 wait ends (the ack made room), and room may allow a pull. */
  ackAnswered(): void {
    // A probe whose lease needed no claim (or never got one) says nothing of the store: let another go.
    this.#store.probeAnswered();
    this.#workSeenAtPull = this.#pullsSent;
    if (this.#wait === 'throttled') this.#endWait();
    this.#o.onIdle(this.idle);
    this.maybePull();
  }

  /** Stops pulling; resolves once no pull is in flight. */
  stop(): Promise<void> {
    this.#stopped = true;
    this.#clearWait();
    if (this.pulling === 0) return Promise.resolve();
    return new Promise((resolve) => (this.#onStopped = resolve));
  }

  /**
   * Whether the process is idle (for --exit-when-idle): a pull sent after the last lease came and the
   * last ack was answered found nothing (a failed ack requeues its lease: only a later pull can tell),
   * nothing is held or on its way, and every workerId was pulled with since start.
   */
  get idle(): boolean {
    return this.#caughtUpPull > this.#workSeenAtPull && this.pulling === 0 && this.#o.scheduler.held === 0 && this.#o.ids.allPulled;
  }

  /** Pull number `pull` (counted in flight already) with `slot`'s workerId, and what its answer says. */
  async #cycle(slot: WorkerSlot, pull: number): Promise<void> {
    const o = this.#o;
    const sentAtMs = o.clock.now();
    let result: PullResult;
    try {
      await o.api.ensureCredential(o.forceSignal);
      o.readiness.credentialObtained();
      // Not the drain signal: a pull aborted mid-flight could leave a lease behind on the server.
      result = await o.api.pull(o.destination, { limit: o.limit, visibilitySeconds: o.visibilitySeconds, workerId: slot.id }, o.forceSignal);
    } catch (err) {
      this.#answered(pull);
      this.#store.probeAnswered();
      o.ids.release(slot);
      if (!o.forceSignal.aborted && !isAbortError(err)) this.#failed(slot, err, sentAtMs);
      return this.maybePull();
    }
    this.#answered(pull);
    if (result.status !== 200) this.#store.probeAnswered();
    try {
      this.#take(slot, result, sentAtMs, pull);
    } catch (err) {
      this.#crashed(slot, err);
    }
    this.maybePull();
  }

  /** A pull was answered (or failed): it is no longer in flight. */
  #answered(pull: number): void {
    this.#outstanding.delete(pull);
    if (this.#stopped && this.pulling === 0) this.#onStopped?.();
  }

  #take(slot: WorkerSlot, result: PullResult, sentAtMs: number, pull: number): void {
    const o = this.#o;
    const durationMs = o.clock.now() - sentAtMs;
    if (result.status !== 200) o.ids.release(slot);
    const eventCount = result.status === 200 ? result.batch.events.length : 0;
    const status = String(result.status) as PullStatusLabel;
    o.events.emit('pull:done', { workerId: slot.id, status, eventCount, durationMs });
    if (result.status === 204) this.#caughtUpPull = Math.max(this.#caughtUpPull, pull);
    else this.#workSeenAtPull = this.#pullsSent;
    if (result.status !== 429) this.#errorStreak = 0;
    if (this.#lastConfigProblem !== undefined) o.logger.info('pull works again: configuration problem cleared');
    this.#lastConfigProblem = undefined;
    o.readiness.configOk(READINESS_KEY);
    if (result.status !== 409) this.#pausedLogged = false;
    if (result.status === 200 || result.status === 204) {
      o.model.pullAnswered(durationMs);
      this.#probing = false;
    }
    switch (result.status) {
      case 200: {
        if (this.#wait === 'idle') {
          this.#wait = undefined;
          this.#clearWait();
        }
        this.#idleWaitMs = o.timings.idleMinMs;
        o.onIdle(false);
        const { leaseId, generation, attempt, events } = result.batch;
        o.events.emit('lease:pulled', { workerId: slot.id, leaseId, generation, deliveryAttempt: attempt, events });
        let earlierPullsAnswered = true;
        for (const other of this.#outstanding) if (other < pull) earlierPullsAnswered = false;
        o.scheduler.accept(new HeldLease(o.leaseContext, o.scheduler, result.batch, slot, sentAtMs), sentAtMs, earlierPullsAnswered);
        break;
      }
      case 204:
        // Caught up with nothing left to finish: every ack sent so far was answered, before this pull.
        if (o.scheduler.held === 0 && pull > this.#workSeenAtPull) o.events.emit('caught-up', { workerId: slot.id, at: o.clock.now() });
        if (this.#wait === undefined || (this.#wait === 'idle' && this.#waitTimer === undefined)) {
          if (!o.ids.allPulled) this.#waitFor('idle', 0);
          else {
            this.#waitFor('idle', withJitter(this.#idleWaitMs));
            this.#idleWaitMs = Math.min(o.timings.idleMaxMs, this.#idleWaitMs * 2);
          }
        }
        o.onIdle(this.idle);
        break;
      case 409:
        // Paused: acks are still accepted (spec); the held leases finish meanwhile.
        o.onIdle(false);
        if (!this.#pausedLogged) o.logger.info('consumer is paused (409): waiting for it to resume');
        this.#pausedLogged = true;
        if (this.#wait !== 'paused') this.#waitFor('paused', withJitter(o.timings.pausedMs));
        break;
      case 429: {
        // 1,000 events leased and unacknowledged (spec): the window is full, for the whole process.
        o.onIdle(false);
        if (this.#wait === 'throttled') break;
        this.#errorStreak++;
        const waitMs = result.retryAfterMs ?? backoffMs(this.#errorStreak, o.timings.errorBaseMs, o.timings.errorMaxMs);
        o.logger.debug({ waitMs }, 'in-flight window full (429): the process backs off');
        this.#waitFor('throttled', waitMs);
        break;
      }
    }
  }

  /** A pull that failed: a configuration problem (slow retries), or an error (exponential back-off). */
  #failed(slot: WorkerSlot, err: unknown, sentAtMs: number): void {
    const o = this.#o;
    o.events.emit('pull:done', { workerId: slot.id, status: pullStatusLabel(err), eventCount: 0, durationMs: o.clock.now() - sentAtMs });
    this.#workSeenAtPull = this.#pullsSent;
    o.onIdle(false);
    const problem = configProblem(err);
    if (problem !== undefined) {
      o.readiness.configError(READINESS_KEY, problem);
      if (problem !== this.#lastConfigProblem)
        o.logger.error({ err }, `configuration error: ${problem}; retrying every ${Math.round(o.timings.configRetryMs / 1000)} s`);
      this.#lastConfigProblem = problem;
      this.#waitFor('config', withJitter(o.timings.configRetryMs));
      return;
    }
    if (this.#wait === 'error') return;
    this.#errorStreak++;
    const retryAfterMs = (err as { retryAfterMs?: unknown }).retryAfterMs;
    const waitMs = typeof retryAfterMs === 'number' ? retryAfterMs : backoffMs(this.#errorStreak, o.timings.errorBaseMs, o.timings.errorMaxMs);
    o.logger.warn({ err, waitMs, errorStreak: this.#errorStreak, retryable: isRetryable(err) }, 'pull failed: backing off');
    this.#waitFor('error', waitMs);
  }

  /** Handling an answer threw (a bug): its workerId rests, with a back-off, and the others go on. */
  #crashed(slot: WorkerSlot, error: unknown): void {
    const o = this.#o;
    if (!o.scheduler.holdsLeaseOf(slot)) o.ids.release(slot);
    const restartInMs = slot.restAfterCrash(o.clock.now());
    o.events.emit('pull:crashed', { workerId: slot.id, error, restartInMs });
    o.logger.error({ err: error, workerId: slot.id, restartInMs, crashes: slot.crashes }, `pulls of ${slot.id} crashed: restarting them`);
    const timer = o.clock.setTimeout(() => this.maybePull(), restartInMs) as { unref?: () => void };
    timer.unref?.();
  }

  #waitFor(wait: Wait, ms: number): void {
    this.#clearWait();
    this.#wait = wait;
    this.#storeWait = false;
    this.#waitTimer = this.#o.clock.setTimeout(
      () => {
        this.#waitTimer = undefined;
        this.#endWait();
      },
      Math.max(0, ms),
    );
  }

  #clearWait(): void {
    if (this.#waitTimer !== undefined) this.#o.clock.clearTimeout(this.#waitTimer);
    this.#waitTimer = undefined;
  }

  #endWait(): void {
    this.#clearWait();
    // After a back-off a single pull probes; caught up, idle polling goes on until work comes.
    if (this.#wait !== 'idle') {
      this.#probing = true;
      this.#wait = undefined;
    }
    this.maybePull();
  }
}

/** Readiness keeps one configuration problem for the process's pulls. */
const READINESS_KEY = 'pull';
