import type { SetupFailure, TeardownFailure } from '../handlers/life-cycle.js';
import type { ChannelMessage } from './thread-protocol.js';
import type { SetUpOptions } from './types.js';

/** How long past its own bound the main thread waits for a thread's teardown report. */
const TEARDOWN_REPORT_GRACE_MS = 500;

/**
 * The handlers' life cycle as the main thread sees it in thread isolation: every thread runs every
 * handler's setup when it starts (retried with backoff there, thread-entry.ts) and tells the pool
 * (thread-protocol.ts, ChannelMessage); the pool is set up once `threads` threads reported success. At drain, the threads are
 * told to tear down and report; the wait is bounded. Failures come as messages (an error's text
 * crosses, not the error).
 */
export class ThreadLifeCycle {
  readonly #threads: number;
  readonly #post: (message: ChannelMessage) => void;
  readonly #setUp = new Set<number>();
  /** The last failure of each thread not set up yet, replayed to the first `onFailure`. */
  readonly #failures = new Map<number, SetupFailure>();
  #onFailure: ((failure: SetupFailure) => void) | undefined = undefined;
  #setUpWaiter: (() => void) | undefined = undefined;
  #tornDown: Map<number, TeardownFailure[]> | undefined = undefined;
  #tornDownWaiter: (() => void) | undefined = undefined;

  constructor(threads: number, post: (message: ChannelMessage) => void) {
    this.#threads = threads;
    this.#post = post;
  }

  /** A thread's message; false when it is not about the life cycle. */
  receive(message: ChannelMessage): boolean {
    switch (message.type) {
      case 'setup-failed': {
        const failure: SetupFailure = { handler: message.handler, error: new Error(message.message), attempt: message.attempt, retryInMs: message.retryInMs };
        if (this.#onFailure === undefined) this.#failures.set(message.threadId, failure);
        else this.#onFailure(failure);
        return true;
      }
      case 'setup-done':
        this.#failures.delete(message.threadId);
        this.#setUp.add(message.threadId);
        if (this.#setUp.size >= this.#threads) this.#setUpWaiter?.();
        return true;
      case 'torn-down':
        this.#tornDown?.set(
          message.threadId,
          message.failures.map((f) => ({ handler: f.handler, error: new Error(f.message) })),
        );
        if (this.#tornDown !== undefined && this.#tornDown.size >= this.#setUp.size) this.#tornDownWaiter?.();
        return true;
      default:
        return false;
    }
  }

  /** Resolves once `threads` threads set every handler up; rejects with the signal's reason. */
  setUp(options: SetUpOptions): Promise<void> {
    this.#onFailure = options.onFailure;
    for (const failure of this.#failures.values()) options.onFailure(failure);
    this.#failures.clear();
    if (this.#setUp.size >= this.#threads) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => reject(options.signal.reason);
      if (options.signal.aborted) return onAbort();
      options.signal.addEventListener('abort', onAbort, { once: true });
      this.#setUpWaiter = () => {
        options.signal.removeEventListener('abort', onAbort);
        resolve();
      };
    });
  }

  /** Asks every thread to tear down; resolves with their failures once each that set up reported, or at the bound. */
  async tearDown(timeoutMs: number): Promise<TeardownFailure[]> {
    if (this.#setUp.size === 0) return [];
    const reports = new Map<number, TeardownFailure[]>();
    this.#tornDown = reports;
    let timer: NodeJS.Timeout | undefined;
    await new Promise<void>((resolve) => {
      this.#tornDownWaiter = resolve;
      timer = setTimeout(resolve, timeoutMs + TEARDOWN_REPORT_GRACE_MS);
      this.#post({ type: 'teardown', timeoutMs });
    });
    clearTimeout(timer);
    const failures = [...reports.values()].flat();
    const silent = this.#setUp.size - reports.size;
    if (silent > 0)
      failures.push({ handler: '(worker threads)', error: new Error(`${silent} worker thread(s) did not report their teardown within ${timeoutMs} ms`) });
    return failures;
  }
}
