import { ErrorCodes } from '../errors.js';
import type { LoadedHandler } from '../handlers/loader.js';
import { atDeadline, whenAborted, type Watch } from '../runtime/abort-fanout.js';
import { systemClock } from '../runtime/clock.js';
import { effectiveDeadlineMs } from './run-handler.js';
import type { ThreadLink } from './thread-link.js';
import { RUN_FAILED, RUN_OK, RUN_PERMANENT, RUN_WAITING, RUN_WITHDRAWN } from './thread-protocol.js';
import type { DispatchResult, DispatchRun, LeaseDispatch } from './types.js';

/** What the runs of a lease need from the pool (thread-pool.ts). */
export interface RunPool {
  /** How long the main thread keeps waiting for a thread after an abort or a deadline. */
  readonly graceMs: number;
  readonly defaultTimeoutMs: number | undefined;
  handler(name: string): LoadedHandler | undefined;
  /** Sends the run to a thread with the other runs started in this turn (a follower: to its leader's thread). */
  send(run: PooledRun): void;
  /** Tells the threads to abort these runs (one message for all of them). */
  abort(taskIds: number[], code: string | undefined): void;
  /** A run on this link missed its deadline plus grace: its thread may be blocked. */
  suspect(link: ThreadLink): void;
}

const UNSTARTED: DispatchResult = Object.freeze({ status: 'unstarted' });

/**
 * One handler run handed to the thread pool, from `start` to its end: its thread's link once sent
 * (and its state in the shared memory of the message it went in), and the watch for a handler
 * timeout of its own. Its end goes to the worker's run object once, whichever comes first: the
 * thread's outcome, the thread's death, or the main thread giving up on it.
 *
 * A follower (`after`, LeaseDispatch.startAfter) goes to the thread of the run it follows, which
 * starts it when that run ends ok. Whoever gives up on a run that has not started, the main thread
 * (withdraw, giveUp) or the thread (its start), does so by compare-and-swap on its state, so the two
 * never disagree on whether it ran.
 */
export class PooledRun {
  readonly run: DispatchRun;
  readonly lease: PooledLease;
  /** Set when sent: names it in the thread's outcomes and in aborts. */
  taskId = 0;
  /** The run it starts after (a follower). */
  after: PooledRun | undefined;
  /** The follower waiting for this run to end, if any. */
  follower: PooledRun | undefined = undefined;
  #link: ThreadLink | undefined = undefined;
  #states: Uint8Array | undefined = undefined;
  #index = -1;
  #ended = false;
  /** How it ended, once it did. */
  #result: DispatchResult | undefined = undefined;
  #ownTimeout: Watch | undefined = undefined;

  constructor(run: DispatchRun, lease: PooledLease, handler: LoadedHandler, pool: RunPool, after?: PooledRun) {
    this.run = run;
    this.lease = lease;
    this.after = after;
    if (after !== undefined) after.follower = this;
    // A handler with a timeout shorter than the lease is watched from now: it starts as it reaches its
    // thread. Not a follower: it starts when its leader ends, however long that takes (its thread
    // times it from then; a thread blocked meanwhile is found through the leader's watch).
    const deadlineMs = after === undefined ? effectiveDeadlineMs(handler, run.job, Date.now(), pool.defaultTimeoutMs) : Number.POSITIVE_INFINITY;
    if (deadlineMs < run.job.ctx.leaseDeadlineMs) this.#ownTimeout = atDeadline(systemClock, deadlineMs + pool.graceMs, () => this.missedDeadline(pool));
  }

  /** It went to `link`'s thread as `taskId`, its state at `states[index]`. */
  sent(link: ThreadLink, taskId: number, states: Uint8Array, index: number): void {
    this.#link = link;
    this.taskId = taskId;
    this.#states = states;
    this.#index = index;
  }

  get ended(): boolean {
    return this.#ended;
  }

  get link(): ThreadLink | undefined {
    return this.#link;
  }

  /** It ended ok where it ran (a follower may start after it). */
  get endedOk(): boolean {
    const result = this.#result;
    return result !== undefined && result.status === 'ok' && result.results === undefined;
  }

  finish(result: DispatchResult): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#result = result;
    this.#ownTimeout?.cancel();
    this.lease.runEnded();
    this.run.end(result);
  }

  /**
   * What its thread recorded of it when its outcome did not come: unstarted (and then it never
   * starts: withdrawn), or how it ended; undefined while it runs.
   */
  recorded(): DispatchResult | undefined {
    if (this.#states === undefined) return UNSTARTED;
    const handler = this.run.job.handler;
    switch (Atomics.compareExchange(this.#states, this.#index, RUN_WAITING, RUN_WITHDRAWN)) {
      case RUN_WAITING:
      case RUN_WITHDRAWN:
        return UNSTARTED;
      case RUN_OK:
        return { status: 'ok' };
      case RUN_FAILED:
        return { status: 'failed', error: { message: `handler ${handler} failed (the error was lost with its worker thread)` } };
      case RUN_PERMANENT:
        return {
          status: 'permanent',
          error: { message: `handler ${handler} failed permanently (the error was lost with its worker thread)`, code: ErrorCodes.PERMANENT },
        };
      default:
        return undefined;
    }
  }

  /**
   * A follower that has not started never will: true (it ended `unstarted`, now or before); false
   * when it has started or ended otherwise.
   */
  withdraw(): boolean {
    if (this.#ended) return this.#result?.status === 'unstarted';
    const recorded = this.recorded();
    if (recorded?.status !== 'unstarted') return false;
    this.#link?.forget(this.taskId);
    this.finish(recorded);
    return true;
  }

  /**
   * Its thread got it after the run it follows had ended there (ThreadJobOutcome.missed), or that
   * run's thread is gone. Ended, that run has told the main thread how it ended: after an ok this
   * one runs as any run; else it never starts. Not ended, that run was itself sent again
   * elsewhere (it had missed its own leader): this one follows it there.
   */
  followMissed(send: (run: PooledRun) => void): void {
    if (this.#ended) return;
    const after = this.after;
    this.#link = undefined;
    this.#states = undefined;
    this.taskId = 0;
    if (after !== undefined && !after.ended && after.link?.closed !== true) return send(this);
    this.after = undefined;
    if (after !== undefined && !after.endedOk) return this.finish(UNSTARTED);
    send(this);
  }

  /** The thread did not answer in time: what it recorded of the run stands; else the run fails and its thread is suspected. */
  giveUp(failure: DispatchResult, pool: RunPool): void {
    if (this.#ended) return;
    // First: a follower not started never will, so the state read below decides for both (the
    // thread records this run's end before it starts the follower).
    this.follower?.withdraw();
    const recorded = this.recorded();
    if (recorded !== undefined) return this.finish(recorded);
    if (this.#link !== undefined) pool.suspect(this.#link);
    this.finish(failure);
  }

  missedDeadline(pool: RunPool): void {
    this.giveUp(
      {
        status: 'failed',
        error: { message: `handler ${this.run.job.handler} did not return by its deadline (worker thread blocked)`, code: ErrorCodes.HANDLER_TIMEOUT },
      },
      pool,
    );
  }
}

/**
 * The runs of one lease in the pool (Dispatcher.open). The threads enforce each run's deadline
 * themselves; the lease watches for the threads that cannot: one timer at the lease deadline plus
 * grace for all its runs, and one listener on its signal that aborts all its running runs in one
 * message, then gives up on those that still do not answer within the grace.
 */
/** Each run's record, kept by the pool it was started on: where `startAfter` finds the run a follower follows, and `withdraw` its run. */
const pooledRuns = new WeakMap<DispatchRun, PooledRun>();

export class PooledLease implements LeaseDispatch {
  readonly #pool: RunPool;
  readonly #signal: AbortSignal;
  readonly #runs: PooledRun[] = [];
  #notEnded = 0;
  #deadlineWatch: Watch | undefined = undefined;
  #signalWatch: Watch | undefined = undefined;
  #graceTimer: NodeJS.Timeout | undefined = undefined;

  constructor(pool: RunPool, signal: AbortSignal) {
    this.#pool = pool;
    this.#signal = signal;
  }

  /** Its signal aborted before the run was sent: it never reaches a thread. */
  get aborted(): boolean {
    return this.#signal.aborted;
  }

  start(run: DispatchRun): void {
    this.#start(run, undefined);
  }

  startAfter(run: DispatchRun, after: DispatchRun): void {
    const leader = this.#recordOf(after);
    // Not a run of this pool (the worker chains only on runs it gave this dispatcher): it never starts.
    if (leader === undefined) return run.end(UNSTARTED);
    this.#start(run, leader);
  }

  withdraw(run: DispatchRun): boolean {
    const pooled = this.#recordOf(run);
    return pooled === undefined || pooled.withdraw();
  }

  /** The pool's record of a run it was given (any of its leases): where a follower finds the run it follows. */
  #recordOf(run: DispatchRun): PooledRun | undefined {
    const record = pooledRuns.get(run);
    return record !== undefined && record.lease.#pool === this.#pool ? record : undefined;
  }

  #start(run: DispatchRun, after: PooledRun | undefined): void {
    const pool = this.#pool;
    const handler = pool.handler(run.job.handler);
    if (handler === undefined) return run.end({ status: 'failed', error: { message: `unknown handler ${run.job.handler}` } });
    if (this.#signal.aborted) return run.end(UNSTARTED);
    if (this.#runs.length === 0) {
      // Every run of the lease shares its deadline: one watch (and one timer per deadline, abort-fanout.ts).
      this.#deadlineWatch = atDeadline(systemClock, run.job.ctx.leaseDeadlineMs + pool.graceMs, () => this.#each((r) => r.missedDeadline(pool)));
      this.#signalWatch = whenAborted(this.#signal, (reason) => this.#aborted(reason));
    }
    const pooled = new PooledRun(run, this, handler, pool, after);
    pooledRuns.set(run, pooled);
    this.#runs.push(pooled);
    this.#notEnded++;
    pool.send(pooled);
  }

  runEnded(): void {
    this.#notEnded--;
  }

  close(): void {
    this.#deadlineWatch?.cancel();
    this.#signalWatch?.cancel();
    clearTimeout(this.#graceTimer);
    this.#runs.length = 0;
  }

  #each(action: (run: PooledRun) => void): void {
    if (this.#notEnded === 0) return;
    for (const run of this.#runs) if (!run.ended) action(run);
  }

  /** The lease deadline or a forced shutdown: abort its running runs, give up on the silent ones after the grace. */
  #aborted(reason: unknown): void {
    const code = (reason as { code?: unknown } | undefined)?.code;
    const taskIds: number[] = [];
    this.#each((run) => {
      if (run.taskId !== 0) taskIds.push(run.taskId);
    });
    if (taskIds.length > 0) this.#pool.abort(taskIds, typeof code === 'string' ? code : undefined);
    const message = code === ErrorCodes.HANDLER_TIMEOUT ? 'did not finish before the lease deadline' : 'was aborted (shutdown)';
    this.#graceTimer = setTimeout(
      () =>
        this.#each((run) =>
          run.giveUp(
            { status: 'failed', error: { message: `handler ${run.run.job.handler} ${message}`, code: typeof code === 'string' ? code : ErrorCodes.ABORTED } },
            this.#pool,
          ),
        ),
      this.#pool.graceMs,
    );
  }
}
