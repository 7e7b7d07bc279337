import type { MessagePort } from 'node:worker_threads';
import { ErrorCodes } from '../errors.js';
import { readOutcomes, RunsWriter, type OutcomesMessage } from './thread-protocol.js';
import type { DispatchResult, DispatchRun } from './types.js';

/** What a link needs of a run it carries (thread-runs.ts's PooledRun is the one). */
export interface RunOnLink {
  readonly run: DispatchRun;
  /** The run it follows on its thread (LeaseDispatch.startAfter), once that one was sent. */
  readonly after: { readonly taskId: number } | undefined;
  /** It went to `link`'s thread as `taskId`, its state at `states[index]`. */
  sent(link: ThreadLink, taskId: number, states: Uint8Array, index: number): void;
  /** Its end, from its thread's outcome or its thread's death. */
  finish(result: DispatchResult): void;
  /** What its thread recorded of it in shared memory; undefined while it runs. */
  recorded(): DispatchResult | undefined;
  /** Its thread got it after the run it follows had ended there: `resend` puts it back in the pool. */
  followMissed(resend: (run: RunOnLink) => void): void;
}

/**
 * The main thread's end of one thread's link: a MessagePort that the thread made when it started
 * and that both keep for the thread's life (thread-entry.ts). Runs go out on it, a turn's worth per
 * message; outcomes come back on it, a turn's worth per message. A piscina task per message would
 * cost a MessageChannel, a task record and a detour through piscina's queue for every few events.
 *
 * The link knows its runs until each has reported, or until its thread is gone: then each ends as the
 * thread recorded it in shared memory, or as a crash.
 */
export class ThreadLink {
  readonly threadId: number;
  readonly #port: MessagePort;
  /** Runs sent and not reported, by task id (a run the main thread gave up on stays until it reports). */
  readonly #runs = new Map<number, RunOnLink>();
  /** Where a follower goes when its thread could not chain it (missed): back to the pool. */
  readonly #resend: (run: RunOnLink) => void;
  #closed = false;

  constructor(threadId: number, port: MessagePort, resend: (run: RunOnLink) => void) {
    this.threadId = threadId;
    this.#port = port;
    this.#resend = resend;
    port.on('message', (outcomes: OutcomesMessage) => this.#readOutcomes(outcomes));
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
  send(runs: readonly RunOnLink[], firstTaskId: number): void {
    const writer = new RunsWriter(firstTaskId, new Uint8Array(new SharedArrayBuffer(runs.length)));
    if (this.#runs.size === 0) this.#port.ref();
    for (let i = 0; i < runs.length; i++) {
      const run = runs[i] as RunOnLink;
      const taskId = firstTaskId + i;
      run.sent(this, taskId, writer.message.states, i);
      this.#runs.set(taskId, run);
      writer.add(run.run.job, run.after?.taskId);
    }
    this.#port.postMessage(writer.message);
  }

  /** A run withdrawn by the main thread: whatever the thread says of it later is ignored. */
  forget(taskId: number): void {
    this.#runs.delete(taskId);
    if (this.#runs.size === 0 && !this.#closed) this.#port.unref();
  }

  #readOutcomes(outcomes: OutcomesMessage): void {
    readOutcomes(outcomes, (taskId, outcome, missed) => {
      const run = this.#runs.get(taskId);
      if (run === undefined) return;
      this.#runs.delete(taskId);
      if (missed) run.followMissed(this.#resend);
      else run.finish(outcome);
    });
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
      run.finish(
        run.recorded() ?? {
          status: 'failed',
          error: { message: `worker thread running ${run.run.job.handler} died: ${reason}`, code: ErrorCodes.HANDLER_CRASH },
        },
      );
    }
    this.#runs.clear();
    this.#port.close();
  }
}
