import type { Logger } from 'pino';
import type { Piscina } from 'piscina';
import { queueOptionsSymbol } from 'piscina';
import type { ChannelMessage } from './thread-protocol.js';

type PiscinaLoadBalancer = NonNullable<NonNullable<ConstructorParameters<typeof Piscina>[0]>['loadBalancer']>;

/**
 * Which thread runs which chunk, and what to do with a thread that stops answering. A run that does
 * not report by its deadline plus grace makes its thread a suspect: it gets no new chunk; if it also
 * misses a ping its event loop is blocked (a handler spinning synchronously), so it is terminated and
 * piscina starts a replacement; if it answers, it was only slow and is cleared.
 */
export class ThreadWatchdog {
  readonly #logger: Logger;
  readonly #channel: InstanceType<typeof BroadcastChannel>;
  readonly #pingTimeoutMs: number;
  readonly #tasksPerThread: number;
  /** Our chunk id -> the thread piscina gave it to (recorded by the balancer). */
  readonly #assigned = new Map<number, number>();
  /** Threads that missed a deadline: no new chunk goes there until a ping clears or ends them. */
  readonly #suspects = new Set<number>();
  readonly #pongs = new Map<number, Set<number>>();
  #pool: Piscina | undefined = undefined;
  #nextNonce = 1;
  #closed = false;

  constructor(options: { logger: Logger; channel: InstanceType<typeof BroadcastChannel>; pingTimeoutMs: number; tasksPerThread: number }) {
    this.#logger = options.logger;
    this.#channel = options.channel;
    this.#pingTimeoutMs = options.pingTimeoutMs;
    this.#tasksPerThread = options.tasksPerThread;
  }

  /** The pool it watches (created with `balancer`). */
  watch(pool: Piscina): void {
    this.#pool = pool;
  }

  /**
   * piscina's least-busy choice, minus suspect threads, remembering which thread got which chunk so
   * that a blocked thread can be named and terminated without a message per run.
   */
  readonly balancer: PiscinaLoadBalancer = (task, threads) => {
    const chunkId = (task as unknown as Record<symbol, { chunkId?: number } | null>)[queueOptionsSymbol]?.chunkId;
    let candidate: (typeof threads)[number] | null = null;
    let lowest = this.#tasksPerThread;
    for (const thread of threads) {
      if (this.#suspects.has(thread.id)) continue;
      if (thread.currentUsage === 0) {
        candidate = thread;
        break;
      }
      if (thread.currentUsage < lowest) {
        candidate = thread;
        lowest = thread.currentUsage;
      }
    }
    if (candidate !== null && chunkId !== undefined) this.#assigned.set(chunkId, candidate.id);
    return candidate;
  };

  /** A chunk's task ended: its thread assignment is forgotten. */
  chunkEnded(chunkId: number): void {
    this.#assigned.delete(chunkId);
  }

  pong(nonce: number, threadId: number): void {
    this.#pongs.get(nonce)?.add(threadId);
  }

  /** A run of chunk `chunkId` missed its deadline plus grace: suspect its thread (see the class). */
  async suspectThreadOf(chunkId: number | undefined): Promise<void> {
    const threadId = chunkId === undefined ? undefined : this.#assigned.get(chunkId);
    if (threadId === undefined || this.#suspects.has(threadId)) return;
    this.#suspects.add(threadId);
    const nonce = this.#nextNonce++;
    const answered = new Set<number>();
    this.#pongs.set(nonce, answered);
    this.#channel.postMessage({ type: 'ping', nonce } satisfies ChannelMessage);
    await new Promise((resolve) => setTimeout(resolve, this.#pingTimeoutMs).unref());
    this.#pongs.delete(nonce);
    this.#suspects.delete(threadId);
    if (this.#closed || answered.has(threadId)) return;
    const thread = this.#pool?.threads.find((t) => t.threadId === threadId);
    if (thread === undefined) return;
    this.#logger.warn({ threadId }, 'worker thread blocked past a handler deadline (no answer to a ping): terminating it; piscina starts a new one');
    await thread.terminate();
  }

  close(): void {
    this.#closed = true;
  }
}
