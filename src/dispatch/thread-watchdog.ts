import type { Logger } from 'pino';
import type { Piscina } from 'piscina';
import type { ChannelMessage } from './thread-protocol.js';

/**
 * What to do with a thread that stops answering. A run that does not report by its deadline plus
 * grace makes its thread a suspect: it gets no new run; if it also misses a ping its event loop is
 * blocked (a handler spinning synchronously), so it is terminated and piscina starts a replacement;
 * if it answers, it was only slow and is cleared.
 */
export class ThreadWatchdog {
  readonly #logger: Logger;
  readonly #channel: InstanceType<typeof BroadcastChannel>;
  readonly #pool: Piscina;
  readonly #pingTimeoutMs: number;
  /** Threads that missed a deadline: no new run goes there until a ping clears or ends them. */
  readonly #suspects = new Set<number>();
  readonly #pongs = new Map<number, Set<number>>();
  #nextNonce = 1;
  #closed = false;

  constructor(options: { logger: Logger; channel: InstanceType<typeof BroadcastChannel>; pool: Piscina; pingTimeoutMs: number }) {
    this.#logger = options.logger;
    this.#channel = options.channel;
    this.#pool = options.pool;
    this.#pingTimeoutMs = options.pingTimeoutMs;
  }

  isSuspect(threadId: number): boolean {
    return this.#suspects.has(threadId);
  }

  pong(nonce: number, threadId: number): void {
    this.#pongs.get(nonce)?.add(threadId);
  }

  /** A run on thread `threadId` missed its deadline plus grace: suspect the thread (see the class). */
  async suspect(threadId: number): Promise<void> {
    if (this.#suspects.has(threadId)) return;
    this.#suspects.add(threadId);
    const nonce = this.#nextNonce++;
    const answered = new Set<number>();
    this.#pongs.set(nonce, answered);
    this.#channel.postMessage({ type: 'ping', nonce } satisfies ChannelMessage);
    await new Promise((resolve) => setTimeout(resolve, this.#pingTimeoutMs).unref());
    this.#pongs.delete(nonce);
    this.#suspects.delete(threadId);
    if (this.#closed || answered.has(threadId)) return;
    const thread = this.#pool.threads.find((t) => t.threadId === threadId);
    if (thread === undefined) return;
    this.#logger.warn({ threadId }, 'worker thread blocked past a handler deadline (no answer to a ping): terminating it; piscina starts a new one');
    await thread.terminate();
  }

  close(): void {
    this.#closed = true;
  }
}
