import { randomUUID } from 'node:crypto';
import type { ResourceLimits } from 'node:worker_threads';
import type { Logger } from 'pino';
import { Piscina } from 'piscina';
import { ErrorCodes } from '../errors.js';
import type { EffectTransactionsOptions } from '../idempotency/postgres-transactions.js';
import type { LoadedHandler } from '../handlers/loader.js';
import { waitUntil } from '../runtime/wait-until.js';
import { ThreadLifeCycle } from './thread-life-cycle.js';
import { ThreadLink } from './thread-link.js';
import { isChannelMessage, isLinkMessage, type ChannelMessage, type LinkMessage, type ThreadTask, type ThreadWorkerData } from './thread-protocol.js';
import { PooledLease, type PooledRun, type RunPool } from './thread-runs.js';
import { ThreadSpanFlush } from './thread-span-flush.js';
import { ThreadWatchdog } from './thread-watchdog.js';
import type { Dispatcher, LeaseDispatch } from './types.js';

import { threadEntry } from './pool-threads.js';

export { poolSize } from './pool-threads.js';

export interface ThreadDispatcherOptions {
  /** The main thread's copy of the handler set (names and timeouts; the threads load their own). */
  handlers: readonly LoadedHandler[];
  handlersDir: string | undefined;
  forward: ThreadWorkerData['forward'];
  logger: Logger;
  logLevel: string;
  /** Threads in the pool (see {@link poolSize}). */
  threads: number;
  defaultTimeoutMs?: number | undefined;
  /** `--otel`: each thread starts its own SDK, and flushes it before the pool ends it. */
  otel?: boolean | undefined;
  /** Transactional handlers: each thread opens its own pool to the store's database, of this size. */
  transactions?: EffectTransactionsOptions | undefined;
  /** How long the main thread keeps waiting for a thread after an abort or the deadline. Default 1000 ms. */
  graceMs?: number;
  /** How long a thread has to answer a liveness ping before it is terminated. Default 2000 ms. */
  pingTimeoutMs?: number;
  /** V8 heap limits of each thread (Node's `Worker` `resourceLimits`); default: Node's. */
  resourceLimits?: ResourceLimits | undefined;
}

/**
 * `--isolation thread`: handlers run in piscina worker threads. A throw or rejection is `failed`, a
 * PermanentError (by code) is `permanent`; a thread that exits or crashes fails its runs (except
 * those it recorded as ended or never started) and piscina replaces it; a handler past its deadline
 * is `failed` even when its thread stays blocked, and a blocked thread (no answer to a ping) is
 * terminated so it cannot hold runs forever. Piscina keeps the threads (starts, replaces, ends
 * them); runs travel on one link per thread (thread-link.ts).
 */
export interface ThreadDispatcher extends Dispatcher {
  /**
   * Resolves once a thread has loaded the handler set and every thread has sent its link (or
   * LINKS_WAIT_MS later); rejects with the thread's load error. Runs started meanwhile wait for it,
   * and end unstarted when it fails.
   */
  warmUp(): Promise<void>;
}

/**
 * How long the warm-up waits for the other threads' links once one thread has loaded the handlers.
 * They are sent as a thread starts, so they come within milliseconds; the bound only keeps a thread
 * that cannot start from holding up the worker (its runs go to the threads that are up).
 */
const LINKS_WAIT_MS = 2_000;

export function createThreadDispatcher(options: ThreadDispatcherOptions): ThreadDispatcher {
  const logger = options.logger;
  const byName = new Map(options.handlers.map((h) => [h.name, h]));
  const channelName = `durable-worker:${randomUUID()}`;
  const channel = new BroadcastChannel(channelName);
  (channel as unknown as { unref?: () => void }).unref?.();
  const otel = options.otel === true;
  const workerData: ThreadWorkerData = {
    handlersDir: options.handlersDir,
    forward: options.forward,
    logLevel: options.logLevel,
    channelName,
    defaultTimeoutMs: options.defaultTimeoutMs,
    otel,
    transactions: options.transactions,
  };
  const pool = new Piscina({
    filename: threadEntry(),
    minThreads: options.threads,
    maxThreads: options.threads,
    idleTimeout: Infinity,
    // Atomics would park a thread between tasks; ours interleave async handlers.
    atomics: 'disabled',
    workerData,
    recordTiming: false,
    ...(options.resourceLimits === undefined ? {} : { resourceLimits: options.resourceLimits }),
  });
  pool.on('error', (err: unknown) => logger.error({ err }, 'worker thread pool error'));
  const watchdog = new ThreadWatchdog({ logger, channel, pool, pingTimeoutMs: options.pingTimeoutMs ?? 2_000 });
  const spanFlush = otel ? new ThreadSpanFlush(channel) : undefined;
  const lifeCycle = new ThreadLifeCycle(options.threads, (message) => channel.postMessage(message));
  // The threads' answers and reports come on their parentPort (thread-entry.ts says why), through piscina.
  const fromThread = (payload: ChannelMessage) => {
    if (payload.type === 'pong') watchdog.pong(payload.nonce, payload.threadId);
    else if (payload.type === 'flushed') spanFlush?.flushed(payload.nonce, payload.threadId);
    else lifeCycle.receive(payload);
  };

  /** The live threads' links, by thread id. */
  const links = new Map<number, ThreadLink>();
  /** Resolved once every thread of the pool has sent its link. */
  let allLinked: () => void = () => {};
  const linked = new Promise<void>((resolve) => (allLinked = resolve));
  let nextTaskId = 1;
  let closed = false;
  /** Runs wait while the threads warm up (sendBalanced spreads the first ones over every thread); after a failed warm-up they end unstarted. */
  let warmUpState: 'warming' | 'warm' | 'failed' = 'warm';
  /** Runs started since the last flush (or waiting for a thread, when none is up). */
  let pending: PooledRun[] = [];
  let flushScheduled = false;
  /** Where new runs may go: the live links not suspected of being blocked (all of them, if every one is). */
  const usableLinks = (): ThreadLink[] => {
    const all = [...links.values()];
    const usable = all.filter((link) => !watchdog.isSuspect(link.threadId));
    return usable.length > 0 ? usable : all;
  };

  function sendRun(run: PooledRun): void {
    pending.push(run);
    scheduleFlush();
  }

  function scheduleFlush(): void {
    if (flushScheduled) return;
    flushScheduled = true;
    setImmediate(flush);
  }

  /**
   * Sends the runs started in this turn of the event loop as one message per thread instead of one
   * per run: the message (structured clone, the thread's wake-up) is the largest cost per event of
   * thread isolation.
   */
  function flush(): void {
    flushScheduled = false;
    if (closed) {
      const runs = pending;
      pending = [];
      for (const run of runs) run.finish({ status: 'failed', error: { message: 'the worker thread pool is closed', code: ErrorCodes.ABORTED } });
      return;
    }
    if (warmUpState === 'failed') {
      for (const run of pending.splice(0)) if (!run.ended) run.finish({ status: 'unstarted' });
      return;
    }
    // No thread up (all of them being replaced): the runs wait for the next link (attach).
    if (links.size === 0 || warmUpState === 'warming') return;
    const runs = pending;
    pending = [];
    const live: PooledRun[] = [];
    const followers: PooledRun[] = [];
    for (const run of runs) {
      // Withdrawn before it was sent.
      if (run.ended) continue;
      // A lease aborted in the same turn its runs started: they never reach a thread.
      if (run.lease.aborted) run.finish({ status: 'unstarted' });
      else if (run.after !== undefined) followers.push(run);
      else live.push(run);
    }
    if (live.length > 0) sendBalanced(live);
    if (followers.length > 0) sendFollowers(followers);
  }

  /**
   * Each run to the thread with the fewest runs, counting those planned in this turn. Balanced per
   * run, not per message: a subject's later events follow its first to the same thread (chained), so
   * where a turn's first runs go is where their subjects stay. A whole turn sent to the freest
   * thread in one message would keep the subjects of that turn, and a CPU-bound handler, on one
   * thread for good.
   */
  function sendBalanced(runs: readonly PooledRun[]): void {
    const targets = usableLinks();
    const loads = targets.map((link) => link.load);
    const shares: PooledRun[][] = targets.map(() => []);
    for (const run of runs) {
      let freest = 0;
      for (let i = 1; i < targets.length; i++) if (loads[i]! < loads[freest]!) freest = i;
      shares[freest]!.push(run);
      loads[freest]!++;
    }
    targets.forEach((link, i) => {
      const share = shares[i]!;
      if (share.length === 0) return;
      link.send(share, nextTaskId);
      nextTaskId += share.length;
    });
  }

  /**
   * Followers go to their leader's thread, after it (one link delivers in order); a chain several
   * deep goes in one message, each follower after its leader. A leader that ended, or whose thread
   * is gone, leaves the follower to the main thread (followMissed).
   */
  function sendFollowers(followers: readonly PooledRun[]): void {
    const byLink = new Map<ThreadLink, PooledRun[]>();
    const planned = new Map<PooledRun, ThreadLink>();
    for (const run of followers) {
      const leader = run.after as PooledRun;
      const leaderLink = leader.link ?? planned.get(leader);
      // Its leader is a follower still on its way: next turn.
      if (leaderLink === undefined && !leader.ended) {
        sendRun(run);
        continue;
      }
      if (leaderLink === undefined || leaderLink.closed || leader.ended) {
        run.followMissed(sendRun);
        continue;
      }
      planned.set(run, leaderLink);
      const list = byLink.get(leaderLink);
      if (list === undefined) byLink.set(leaderLink, [run]);
      else list.push(run);
    }
    for (const [link, list] of byLink) {
      link.send(list, nextTaskId);
      nextTaskId += list.length;
    }
  }

  /** A thread started (or replaced one that died) and sent its end of a link: runs can go there. */
  const attach = ({ threadId, port }: LinkMessage) => {
    const thread = pool.threads.find((t) => t.threadId === threadId);
    if (closed || thread === undefined) return port.close();
    // Every run a link carries is one this pool sent it.
    const link = new ThreadLink(threadId, port, (run) => sendRun(run as PooledRun));
    let crash: string | undefined;
    // An uncaught error in a handler ends its thread: the error comes first, then the exit.
    thread.on('error', (err: unknown) => (crash ??= err instanceof Error ? err.message : String(err)));
    thread.once('exit', (code: number) => {
      links.delete(threadId);
      link.threadExited(crash ?? `worker exited with code: ${code}`);
    });
    links.set(threadId, link);
    if (links.size >= options.threads) allLinked();
    if (pending.length > 0) scheduleFlush();
  };
  pool.on('message', (message: unknown) => {
    if (isLinkMessage(message)) attach(message);
    else if (isChannelMessage(message)) fromThread(message);
  });

  const runPool: RunPool = {
    graceMs: options.graceMs ?? 1_000,
    defaultTimeoutMs: options.defaultTimeoutMs,
    handler: (name) => byName.get(name),
    send: sendRun,
    abort(taskIds, code) {
      channel.postMessage({ type: 'abort', taskIds, code } satisfies ChannelMessage);
    },
    suspect(link) {
      void watchdog.suspect(link.threadId);
    },
  };

  return {
    open(signal: AbortSignal): LeaseDispatch {
      return new PooledLease(runPool, signal);
    },
    async warmUp() {
      warmUpState = 'warming';
      try {
        await pool.run({ warmUp: true } satisfies ThreadTask);
        // The first runs are balanced over the threads that are up, and their subjects stay there
        // while their events keep coming (sendBalanced): the first runs wait for every thread.
        await waitUntil(linked, LINKS_WAIT_MS);
        warmUpState = 'warm';
      } catch (err) {
        warmUpState = 'failed';
        throw err;
      } finally {
        if (pending.length > 0) scheduleFlush();
      }
    },
    // Without a setup anywhere there is nothing to wait for (the threads report anyway).
    setUp: (setUpOptions) => (options.handlers.some((h) => h.setup !== undefined) ? lifeCycle.setUp(setUpOptions) : Promise.resolve()),
    tearDown: async (timeoutMs) => (options.handlers.some((h) => h.teardown !== undefined) ? lifeCycle.tearDown(timeoutMs) : []),
    async close() {
      if (closed) return;
      closed = true;
      flush(); // runs still waiting for a thread end now
      watchdog.close();
      await spanFlush?.flush(options.threads);
      channel.close();
      // Everything still running is past its drain: end the threads rather than wait for them.
      await pool.destroy();
    },
  };
}
