import type { ChannelMessage } from './thread-protocol.js';

/** How long the pool's close waits for its threads to export what they buffered. */
const FLUSH_TIMEOUT_MS = 5_000;

/**
 * With `--otel` every handler thread exports its own spans (its SDK batches them): the pool asks each
 * thread to flush before it ends them, since a terminated thread's buffer is lost. A thread answers
 * once its export is done (or failed); the wait ends when every thread answered, or at the timeout.
 */
export class ThreadSpanFlush {
  readonly #channel: InstanceType<typeof BroadcastChannel>;
  readonly #waiting = new Map<number, { threads: Set<number>; expected: number; done: () => void }>();
  #nextNonce = 1;

  constructor(channel: InstanceType<typeof BroadcastChannel>) {
    this.#channel = channel;
  }

  /** A thread's answer (the pool passes a thread's `flushed` messages here). */
  flushed(nonce: number, threadId: number): void {
    const wait = this.#waiting.get(nonce);
    if (wait === undefined) return;
    wait.threads.add(threadId);
    if (wait.threads.size >= wait.expected) wait.done();
  }

  /** Asks `threads` threads to flush; resolves when all answered or after the timeout. */
  async flush(threads: number): Promise<void> {
    const nonce = this.#nextNonce++;
    let timer: NodeJS.Timeout | undefined;
    await new Promise<void>((resolve) => {
      this.#waiting.set(nonce, { threads: new Set(), expected: threads, done: resolve });
      timer = setTimeout(resolve, FLUSH_TIMEOUT_MS);
      this.#channel.postMessage({ type: 'flush', nonce } satisfies ChannelMessage);
    });
    clearTimeout(timer);
    this.#waiting.delete(nonce);
  }
}
