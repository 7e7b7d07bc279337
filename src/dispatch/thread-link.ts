import type { MessagePort } from 'node:worker_threads';
import { ErrorCodes } from '../errors.js';
import type { TraceCarrier } from '../tracing/trace-context.js';
import type { CloudEvent } from '../types.js';
import { NO_LEADER, NOT_OK_DURATION, type OutcomesMessage, type RunsMessage, type ThreadOutcome } from './thread-protocol.js';
import type { JobContext } from './types.js';
import type { PooledRun } from './thread-runs.js';

/**
 * The main thread's end of one thread's link: a MessagePort that the thread made when it started
 * and that both keep for the thread's life (thread-entry.ts). Runs go out on it, a turn's worth per
 * message; outcomes come back on it, a turn's worth per message. A piscina task per message cost a
 * MessageChannel, a task record and a detour through piscina's queue for every few events
 * (docs/benchmarks.md, "Thread links and chained runs").
 *
 * The link knows its runs until each has reported, or until its thread is gone: then each ends as the
 * thread recorded it in shared memory, or as a crash.
 */
export class ThreadLink {
  readonly threadId: number;
  readonly #port: MessagePort;
  /** Runs sent and not reported, by task id (a run the main thread gave up on stays until it reports). */
  readonly #runs = new Map<number, PooledRun>();
  /** Where a follower goes when its thread could not chain it (missed): back to the pool. */
  readonly #resend: (run: PooledRun) => void;
  #closed = false;

  constructor(threadId: number, port: MessagePort, resend: (run: PooledRun) => void) {
    this.threadId = threadId;
    this.#port = port;
    this.#resend = resend;
    port.on('message', (outcomes: OutcomesMessage) => this.#settle(outcomes));
    // Referenced only while runs are out (send): an idle link must not keep the process alive.
    port.unref();
  }

  /** Runs on the thread now: the pool sends new runs to the link with the fewest. */
  get load(): number {
    return this.#runs.size;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Sends `runs` (task ids from `firstTaskId` on) in one message; their states share one buffer. */
  send(runs: readonly PooledRun[], firstTaskId: number): void {
    const count = runs.length;
    const states = new Uint8Array(new SharedArrayBuffer(count));
    // Filled by push, never `new Array(count)`: the clone copies an array with holes element by
    // element with its index, and one without as a dense list (V8's ValueSerializer).
    const handlers: string[] = [];
    const events: CloudEvent[] = [];
    const contexts: JobContext[] = [];
    let batches: (CloudEvent[] | undefined)[] | undefined;
    let traces: (TraceCarrier | undefined)[] | undefined;
    let after: number[] | undefined;
    if (this.#runs.size === 0) this.#port.ref();
    for (let i = 0; i < count; i++) {
      const run = runs[i] as PooledRun;
      const taskId = firstTaskId + i;
      run.sent(this, taskId, states, i);
      this.#runs.set(taskId, run);
      const job = run.run.job;
      handlers.push(job.handler);
      events.push(job.event);
      contexts.push(job.ctx);
      // The rare columns begin with the first run that needs them.
      if (job.events !== undefined) batches ??= filled(i, undefined);
      batches?.push(job.events);
      if (job.trace !== undefined) traces ??= filled(i, undefined);
      traces?.push(job.trace);
      if (run.after !== undefined) after ??= filled(i, NO_LEADER);
      after?.push(run.after === undefined ? NO_LEADER : run.after.taskId);
    }
    const message: RunsMessage = { firstTaskId, handlers, events, contexts, states };
    if (batches !== undefined) message.batches = batches;
    if (traces !== undefined) message.traces = traces;
    if (after !== undefined) message.after = after;
    this.#port.postMessage(message);
  }

  /** A run withdrawn by the main thread: whatever the thread says of it later is ignored. */
  forget(taskId: number): void {
    this.#runs.delete(taskId);
    if (this.#runs.size === 0 && !this.#closed) this.#port.unref();
  }

  #settle({ taskIds, okDurationsMs, others }: OutcomesMessage): void {
    let other = 0;
    for (let i = 0; i < taskIds.length; i++) {
      const durationMs = okDurationsMs[i] as number;
      const reported = durationMs === NOT_OK_DURATION ? (others[other++] as ThreadOutcome) : undefined;
      const taskId = taskIds[i] as number;
      const run = this.#runs.get(taskId);
      if (run === undefined) continue;
      this.#runs.delete(taskId);
      if (reported === undefined) run.finish({ status: 'ok', durationMs });
      else if (reported.missed === true) run.followMissed(this.#resend);
      else run.finish(reported.outcome);
    }
    if (this.#runs.size === 0 && !this.#closed) this.#port.unref();
  }

  /**
   * The thread exited (a crash, `process.exit` in a handler, a termination): each run still out
   * ends as its state says (unstarted, or how it ended), the running ones as crashed with `reason`.
   */
  threadExited(reason: string): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const run of this.#runs.values()) {
      run.finish(run.recorded() ?? { status: 'failed', error: { message: `worker thread running ${run.run.job.handler} died: ${reason}`, code: ErrorCodes.HANDLER_CRASH } });
    }
    this.#runs.clear();
    this.#port.close();
  }
}

/** `count` times `value`, pushed (an array without holes). */
function filled<T>(count: number, value: T): T[] {
  const array: T[] = [];
  for (let i = 0; i < count; i++) array.push(value);
  return array;
}
