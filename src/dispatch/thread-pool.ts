import { randomUUID } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { MessageChannel, type ResourceLimits } from 'node:worker_threads';
import type { Logger } from 'pino';
import { Piscina, queueOptionsSymbol } from 'piscina';
import { ErrorCodes } from '../errors.js';
import type { LoadedHandler } from '../handlers/loader.js';
import { ThreadLifeCycle } from './thread-life-cycle.js';
import type { ChannelMessage, ThreadJobOutcome, ThreadTask, ThreadWorkerData } from './thread-protocol.js';
import { PooledLease, type PooledRun, type RunPool } from './thread-runs.js';
import { ThreadSpanFlush } from './thread-span-flush.js';
import { ThreadWatchdog } from './thread-watchdog.js';
import type { Dispatcher, LeaseDispatch } from './types.js';

/** Fewer runs than this in one turn go to one thread in one message (see flush). */
const MIN_RUNS_PER_CHUNK = 32;

export interface ThreadDispatcherOptions {
  /** The main thread's copy of the handler set (names and timeouts; the threads load their own). */
  handlers: readonly LoadedHandler[];
  handlersDir: string | undefined;
  forward: ThreadWorkerData['forward'];
  logger: Logger;
  logLevel: string;
  /** Threads in the pool (see {@link poolSize}). */
  threads: number;
  /** Runs one thread runs at once (async handlers interleave on its event loop). */
  tasksPerThread: number;
  defaultTimeoutMs?: number | undefined;
  /** `--otel`: each thread starts its own SDK, and flushes it before the pool ends it. */
  otel?: boolean | undefined;
  /** How long the main thread keeps waiting for a thread after an abort or the deadline. Default 1000 ms. */
  graceMs?: number;
  /** How long a thread has to answer a liveness ping before it is terminated. Default 2000 ms. */
  pingTimeoutMs?: number;
  /** V8 heap limits of each thread (Node's `Worker` `resourceLimits`); default: Node's. */
  resourceLimits?: ResourceLimits | undefined;
}

/**
 * Pool sizing: one thread per core except the one the main thread keeps busy (HTTP, JSON, the store,
 * scheduling), but at least two, so that a handler blocking its thread never stalls every other
 * handler until the blocked thread is found and replaced (deadline + grace + ping, seconds); and never
 * more than the events that can run at once (`--max-in-progress`). Handlers are mostly I/O-bound, so
 * one thread runs several at once instead of the pool growing to one thread per event (a thread costs
 * a V8 heap, 25-60 MB under load, and a module load). Threads = min(budget, max(2, cores - 1)); runs
 * per thread = ceil(budget / threads).
 */
export function poolSize(maxInProgress: number, cores: number = availableParallelism()): { threads: number; tasksPerThread: number } {
  const budget = Math.max(1, maxInProgress);
  const threads = Math.max(1, Math.min(budget, Math.max(2, cores - 1)));
  return { threads, tasksPerThread: Math.ceil(budget / threads) };
}

/**
 * Where the thread entry is: compiled `dist/dispatch/thread-entry.js` next to this file, or, when this
 * file itself runs from TypeScript sources (vitest, `node --import tsx`), a `.mjs` bootstrap that
 * compiles `thread-entry.ts` with tsx's `tsImport` inside the thread (TOOLCHAIN: `--import tsx/esm`
 * in execArgv does not reach worker threads on Node 20; verified here, also with an absolute URL).
 */
function threadEntry(): string {
  const self = import.meta.url;
  return self.endsWith('.ts') ? new URL('./thread-bootstrap.mjs', self).href : new URL('./thread-entry.js', self).href;
}

/**
 * `--isolation thread`: handlers run in piscina worker threads. A throw or rejection is `failed`, a
 * PermanentError (by code) is `permanent`; a thread that exits or crashes fails its runs (except
 * those it recorded as ended or never started) and piscina replaces it; a handler past its deadline
 * is `failed` even when its thread stays blocked, and a blocked thread (no answer to a ping) is
 * terminated so it cannot hold runs forever.
 */
export interface ThreadDispatcher extends Dispatcher {
  /** Resolves once a thread has loaded the handler set; rejects with the thread's load error. */
  warmUp(): Promise<void>;
}

export function createThreadDispatcher(options: ThreadDispatcherOptions): ThreadDispatcher {
  const logger = options.logger;
  const byName = new Map(options.handlers.map((h) => [h.name, h]));
  const channelName = `durable-worker:${randomUUID()}`;
  const channel = new BroadcastChannel(channelName);
  (channel as unknown as { unref?: () => void }).unref?.();
  const watchdog = new ThreadWatchdog({ logger, channel, pingTimeoutMs: options.pingTimeoutMs ?? 2_000, tasksPerThread: options.tasksPerThread });
  const lifeCycle = new ThreadLifeCycle(options.threads, (message) => channel.postMessage(message));
  channel.onmessage = (message: unknown) => {
    const payload = (message as { data: ChannelMessage }).data;
    if (payload.type === 'pong') watchdog.pong(payload.nonce, payload.threadId);
    else if (payload.type === 'flushed') spanFlush?.flushed(payload.nonce, payload.threadId);
    else lifeCycle.receive(payload);
  };
  const otel = options.otel === true;
  const spanFlush = otel ? new ThreadSpanFlush(channel) : undefined;
  const workerData: ThreadWorkerData = { handlersDir: options.handlersDir, forward: options.forward, logLevel: options.logLevel, channelName, defaultTimeoutMs: options.defaultTimeoutMs, otel };
  const pool = new Piscina({
    loadBalancer: watchdog.balancer,
    filename: threadEntry(),
    minThreads: options.threads,
    maxThreads: options.threads,
    idleTimeout: Infinity,
    concurrentTasksPerWorker: options.tasksPerThread,
    // Atomics would park a thread between tasks; ours interleave async handlers.
    atomics: 'disabled',
    workerData,
    recordTiming: false,
    ...(options.resourceLimits === undefined ? {} : { resourceLimits: options.resourceLimits }),
  });
  pool.on('error', (err: unknown) => logger.error({ err }, 'worker thread pool error'));
  watchdog.watch(pool);

  let nextTaskId = 1;
  let nextChunkId = 1;
  let closed = false;
  /** Runs started since the last flush. */
  let pending: PooledRun[] = [];
  let flushScheduled = false;

  /**
   * Sends one chunk: its runs' states in shared memory, their outcomes on a port as they finish (or
   * with the task's result, the last turn's), each exactly once. The port stays open until every run
   * of the chunk has reported.
   */
  const sendChunk = (runs: readonly PooledRun[]) => {
    const chunkId = nextChunkId++;
    const firstTaskId = nextTaskId;
    nextTaskId += runs.length;
    const states = new Uint8Array(new SharedArrayBuffer(runs.length));
    runs.forEach((run, index) => {
      run.taskId = firstTaskId + index;
      run.chunkId = chunkId;
      run.states = states;
      run.index = index;
    });
    const { port1, port2 } = new MessageChannel();
    let unreported = runs.length;
    const settle = (outcomes: readonly ThreadJobOutcome[]) => {
      // A run already given up on still reports once: count it too.
      unreported -= outcomes.length;
      for (const { taskId, outcome } of outcomes) runs[taskId - firstTaskId]?.finish(outcome);
      if (unreported <= 0) port1.close();
    };
    // Stays referenced until its last outcome arrived: after the task resolved, outcomes still on
    // their way on the port are all that keeps a draining process alive.
    port1.on('message', settle);
    // The symbol-keyed queue options reach the balancer but not the thread (structured clone skips symbols).
    const task = { chunkId, jobs: runs.map((run) => ({ taskId: run.taskId, job: run.run.job })), port: port2, states, [queueOptionsSymbol]: { chunkId } } as ThreadTask;
    pool.run(task, { transferList: [port2] }).then(settle, (err: unknown) => {
      // Piscina rejects the task of a thread that exited (process.exit) or crashed: every run of the
      // chunk that had not reported fails, except those its states account for.
      const message = err instanceof Error ? err.message : String(err);
      for (const run of runs) {
        const handler = run.run.job.handler;
        run.finish(run.recorded() ?? { status: 'failed', error: { message: `worker thread running ${handler} died: ${message}`, code: ErrorCodes.HANDLER_CRASH } });
      }
      port1.close();
    }).finally(() => watchdog.chunkEnded(chunkId));
  };

  /**
   * Sends the runs started in this turn of the event loop as one piscina task per thread instead of
   * one per run: the message round trip (structured clone, thread wake-up, piscina bookkeeping) was
   * the largest cost per event of thread isolation (docs/benchmarks.md). A turn's runs are split over
   * the threads only when each share is worth a message.
   */
  const flush = () => {
    flushScheduled = false;
    const runs = pending;
    pending = [];
    if (closed) {
      for (const run of runs) run.finish({ status: 'failed', error: { message: 'the worker thread pool is closed', code: ErrorCodes.ABORTED } });
      return;
    }
    // A lease aborted in the same turn its runs started: they never reach a thread.
    const live: PooledRun[] = [];
    for (const run of runs) {
      if (run.lease.aborted) run.finish({ status: 'unstarted' });
      else live.push(run);
    }
    if (live.length === 0) return;
    const chunks = Math.max(1, Math.min(options.threads, Math.floor(live.length / MIN_RUNS_PER_CHUNK)));
    for (let c = 0; c < chunks; c++) sendChunk(chunks === 1 ? live : live.filter((_, i) => i % chunks === c));
  };

  const runPool: RunPool = {
    graceMs: options.graceMs ?? 1_000,
    defaultTimeoutMs: options.defaultTimeoutMs,
    handler: (name) => byName.get(name),
    send(run) {
      pending.push(run);
      if (flushScheduled) return;
      flushScheduled = true;
      setImmediate(flush);
    },
    abort(taskIds, code) {
      channel.postMessage({ type: 'abort', taskIds, code } satisfies ChannelMessage);
    },
    suspect(chunkId) {
      void watchdog.suspectThreadOf(chunkId);
    },
  };

  return {
    open(signal: AbortSignal): LeaseDispatch {
      return new PooledLease(runPool, signal);
    },
    async warmUp() {
      await pool.run({ chunkId: 0, warmUp: true } satisfies ThreadTask);
    },
    // Without a setup anywhere there is nothing to wait for (the threads report anyway).
    setUp: (setUpOptions) => (options.handlers.some((h) => h.setup !== undefined) ? lifeCycle.setUp(setUpOptions) : Promise.resolve()),
    tearDown: async (timeoutMs) => (options.handlers.some((h) => h.teardown !== undefined) ? lifeCycle.tearDown(timeoutMs) : []),
    async close() {
      if (closed) return;
      closed = true;
      watchdog.close();
      await spanFlush?.flush(options.threads);
      channel.close();
      // Everything still running is past its drain: end the threads rather than wait for them.
      await pool.destroy();
    },
  };
}
