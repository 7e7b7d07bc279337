import { randomUUID } from 'node:crypto';
import { MessageChannel, type ResourceLimits } from 'node:worker_threads';
import { availableParallelism } from 'node:os';
import type { Logger } from 'pino';
import { Piscina, queueOptionsSymbol } from 'piscina';
import { ErrorCodes } from '../errors.js';
import type { LoadedHandler } from '../handlers/loader.js';
import { atDeadline, whenAborted, type Watch } from '../abort-fanout.js';
import { effectiveDeadlineMs, systemClock } from './run-handler.js';
import { RUN_FAILED, RUN_OK, RUN_PERMANENT, RUN_WAITING, type ChannelMessage, type ThreadJob, type ThreadJobOutcome, type ThreadJobStart, type ThreadLane, type ThreadTask, type ThreadWorkerData } from './thread-protocol.js';
import type { BatchLane, Dispatcher, DispatchJob, DispatchResult } from './types.js';

type PiscinaLoadBalancer = NonNullable<NonNullable<ConstructorParameters<typeof Piscina>[0]>['loadBalancer']>;

/** Fewer jobs than this in one turn go to one thread in one message (see flush). */
const MIN_JOBS_PER_CHUNK = 32;

export interface ThreadDispatcherOptions {
  /** The main thread's copy of the handler set (names and timeouts; the threads load their own). */
  handlers: readonly LoadedHandler[];
  handlersDir: string | undefined;
  forward: ThreadWorkerData['forward'];
  logger: Logger;
  logLevel: string;
  /** Threads in the pool (see {@link poolSize}). */
  threads: number;
  /** Tasks one thread runs at once (async handlers interleave on its event loop). */
  tasksPerThread: number;
  defaultTimeoutMs?: number | undefined;
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
 * more than the events that can be in flight (`workers * concurrency`). Handlers are mostly I/O-bound,
 * so one thread runs several tasks at once instead of the pool growing to one thread per in-flight
 * event (a thread costs a V8 heap, 25-60 MB under load, and a module load). Threads =
 * min(inFlight, max(2, cores - 1)); tasks per thread = ceil(inFlight / threads).
 */
export function poolSize(workers: number, concurrency: number, cores: number = availableParallelism()): { threads: number; tasksPerThread: number } {
  const inFlight = Math.max(1, workers * concurrency);
  const threads = Math.max(1, Math.min(inFlight, Math.max(2, cores - 1)));
  return { threads, tasksPerThread: Math.ceil(inFlight / threads) };
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
 * PermanentError (by code) is `permanent`; a thread that exits or crashes fails its tasks and
 * piscina replaces it; a handler past its deadline is `failed` even when its thread stays blocked,
 * and a blocked thread (no answer to a ping) is terminated so it cannot hold tasks forever.
 */
export interface ThreadDispatcher extends Dispatcher {
  /** Resolves once a thread has loaded the handler set; rejects with the thread's load error. */
  warmUp(): Promise<void>;
}

const UNSTARTED: DispatchResult = Object.freeze({ status: 'unstarted' });


/**
 * What the thread recorded of a lane job whose outcome did not come (ThreadLane.states): unstarted,
 * or how it ended; undefined while it runs, and for a job outside a lane.
 */
function recordedOutcome(job: { states?: Uint8Array | undefined; index?: number | undefined }, handler: string): DispatchResult | undefined {
  if (job.states === undefined) return undefined;
  switch (Atomics.load(job.states, job.index as number)) {
    case RUN_WAITING:
      return UNSTARTED;
    case RUN_OK:
      return { status: 'ok' };
    case RUN_FAILED:
      return { status: 'failed', error: { message: `handler ${handler} failed (the error was lost with its worker thread)` } };
    case RUN_PERMANENT:
      return { status: 'permanent', error: { message: `handler ${handler} failed permanently (the error was lost with its worker thread)`, code: ErrorCodes.PERMANENT } };
    default:
      return undefined;
  }
}

export function createThreadDispatcher(options: ThreadDispatcherOptions): ThreadDispatcher {
  const logger = options.logger;
  const graceMs = options.graceMs ?? 1_000;
  const pingTimeoutMs = options.pingTimeoutMs ?? 2_000;
  const byName = new Map(options.handlers.map((h) => [h.name, h]));
  const channelName = `durable-worker:${randomUUID()}`;
  const workerData: ThreadWorkerData = {
    handlersDir: options.handlersDir,
    forward: options.forward,
    logLevel: options.logLevel,
    channelName,
    defaultTimeoutMs: options.defaultTimeoutMs,
  };
  /** Our chunk id -> the thread piscina gave it to (recorded by the balancer below). */
  const assigned = new Map<number, number>();
  /** Threads that missed a deadline: no new task goes there until a ping clears or ends them. */
  const suspects = new Set<number>();
  /**
   * Shard of a lane -> the thread running it. A lane is split into one shard per thread (each keeps
   * its share of the limit, see flush) so that CPU-bound handlers of a single worker still use every
   * thread; each shard's limit is kept by one thread, so every chunk of a shard goes there (a
   * suspect or dead thread gives the shard to another).
   */
  const laneThread = new Map<number, number>();

  /**
   * piscina's least-busy choice, minus suspect threads, remembering which thread got which task so a
   * blocked thread can be named and terminated without a per-task message.
   */
  const balancer: PiscinaLoadBalancer = (task, threads) => {
    const ours = (task as unknown as Record<symbol, { chunkId?: number; laneId?: number } | null>)[queueOptionsSymbol];
    const pinned = ours?.laneId === undefined ? undefined : laneThread.get(ours.laneId);
    if (pinned !== undefined && !suspects.has(pinned)) {
      const thread = threads.find((t) => t.id === pinned);
      if (thread !== undefined) {
        if (ours?.chunkId !== undefined) assigned.set(ours.chunkId, thread.id);
        return thread;
      }
    }
    let candidate: (typeof threads)[number] | null = null;
    let lowest = options.tasksPerThread;
    for (const thread of threads) {
      if (suspects.has(thread.id)) continue;
      if (thread.currentUsage === 0) {
        candidate = thread;
        break;
      }
      if (thread.currentUsage < lowest) {
        candidate = thread;
        lowest = thread.currentUsage;
      }
    }
    if (candidate !== null && ours?.chunkId !== undefined) assigned.set(ours.chunkId, candidate.id);
    if (candidate !== null && ours?.laneId !== undefined) laneThread.set(ours.laneId, candidate.id);
    return candidate;
  };

  const pool = new Piscina({
    loadBalancer: balancer,
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

  const channel = new BroadcastChannel(channelName);
  (channel as unknown as { unref?: () => void }).unref?.();
  const pongs = new Map<number, Set<number>>();
  channel.onmessage = (message: unknown) => {
    const payload = (message as { data: ChannelMessage }).data;
    if (payload.type === 'pong') pongs.get(payload.nonce)?.add(payload.threadId);
  };

  let nextTaskId = 1;
  let nextChunkId = 1;
  let nextNonce = 1;
  let closed = false;

  /**
   * The thread running a job of chunk `chunkId` did not answer by the deadline plus grace. It gets
   * no new task; if it also misses a ping its event loop is blocked (a handler spinning
   * synchronously), so it is terminated and piscina starts a replacement; if it answers, it was only
   * slow and is cleared.
   */
  const suspectThreadOf = async (chunkId: number | undefined): Promise<void> => {
    const threadId = chunkId === undefined ? undefined : assigned.get(chunkId);
    if (threadId === undefined || suspects.has(threadId)) return;
    suspects.add(threadId);
    const nonce = nextNonce++;
    const answered = new Set<number>();
    pongs.set(nonce, answered);
    channel.postMessage({ type: 'ping', nonce } satisfies ChannelMessage);
    await new Promise((resolve) => setTimeout(resolve, pingTimeoutMs).unref());
    pongs.delete(nonce);
    suspects.delete(threadId);
    if (closed || answered.has(threadId)) return;
    const thread = pool.threads.find((t) => t.threadId === threadId);
    if (thread === undefined) return;
    logger.warn({ threadId }, 'worker thread blocked past a handler deadline (no answer to a ping): terminating it; piscina starts a new one');
    await thread.terminate();
  };

  /**
   * A job between dispatch and its outcome. What a job needs is kept on it, reached through its
   * chunk, and not in maps of the dispatcher keyed by task id: a long-lived Map that entries keep
   * entering and leaving is rehashed now and then, and V8 leaves the old table in the old
   * generation still pointing at the entries it held. The scavenger takes those pointers as live,
   * so every job (and its event) survived until a major collection: ~1.3 KB promoted per event with
   * `--isolation thread` (docs/benchmarks.md).
   */
  interface PendingJob {
    threadJob: ThreadJob;
    /** Settles the job once; later calls do nothing. */
    finish: (outcome: DispatchResult) => void;
    lane: BatchLane | undefined;
    /** A lane's run with a timeout of its own: re-arms its watchdog when it starts. */
    onStart?: ((atMs: number) => void) | undefined;
    /** Once sent: its chunk; in a lane's chunk also that chunk's run states, the job's index in it, its shard. */
    chunkId?: number;
    states?: Uint8Array;
    index?: number;
    shard?: Shard;
  }
  /** Jobs dispatched since the last flush. */
  let pending: PendingJob[] = [];
  let flushScheduled = false;
  /** A lane's share on one thread: the lane id the thread knows, its part of the limit, its runs not settled. */
  interface Shard {
    id: number;
    limit: number;
    unsettled: number;
  }
  /** Per lane with runs not settled: how many, the drain watch, its shards once sent, whether stopped. */
  const lanes = new Map<number, { unsettled: number; stopWatch: Watch | undefined; shards: Shard[] | undefined; stopped: boolean }>();
  let nextShardId = 1;
  /** Nothing more of the lane starts: its waiting runs end unstarted, in the thread and on their way. */
  const stopLane = (laneId: number) => {
    const state = lanes.get(laneId);
    if (state === undefined || state.stopped) return;
    state.stopped = true;
    for (const shard of state.shards ?? []) channel.postMessage({ type: 'stop-lane', laneId: shard.id } satisfies ChannelMessage);
  };
  /** One shard per thread (at most one per slot of the limit), the limit split between them. */
  const shardsFor = (limit: number): Shard[] => {
    const count = Math.max(1, Math.min(options.threads, limit));
    return Array.from({ length: count }, (_, s) => ({ id: nextShardId++, limit: Math.floor(limit / count) + (s < limit % count ? 1 : 0), unsettled: 0 }));
  };

  const sendChunk = (chunk: readonly PendingJob[], lane: ThreadLane | undefined) => {
    const chunkId = nextChunkId++;
    const byTaskId = new Map<number, PendingJob>();
    for (const job of chunk) {
      job.chunkId = chunkId;
      byTaskId.set(job.threadJob.taskId, job);
    }
    const { port1, port2 } = new MessageChannel();
    // Each outcome comes once: on the port as it finishes, or with the task's result (the last
    // turn's). The port stays open until every job of the chunk settled, whichever came first.
    let unsettled = chunk.length;
    const settle = (outcomes: readonly ThreadJobOutcome[]) => {
      // A job already failed by the watchdog or an abort still reports once: count it too.
      unsettled -= outcomes.length;
      for (const { taskId, outcome } of outcomes) byTaskId.get(taskId)?.finish(outcome);
      if (unsettled <= 0) port1.close();
    };
    // Stays referenced until its last outcome arrived: after the task resolved, outcomes still on
    // their way on the port are all that keeps a draining process alive.
    port1.on('message', (message: readonly ThreadJobOutcome[] | ThreadJobStart) => {
      if (Array.isArray(message)) settle(message);
      else {
        const { startedTaskId, atMs } = message as ThreadJobStart;
        byTaskId.get(startedTaskId)?.onStart?.(atMs);
      }
    });
    // The symbol-keyed queue options reach the balancer but not the thread (structured clone skips symbols).
    const task = {
      chunkId,
      jobs: chunk.map((j) => j.threadJob),
      port: port2,
      ...(lane === undefined ? {} : { lane }),
      [queueOptionsSymbol]: { chunkId, laneId: lane?.id },
    } as ThreadTask;
    pool.run(task, { transferList: [port2] }).then(
      (outcomes: ThreadJobOutcome[]) => settle(outcomes),
      (err: unknown) => {
        // Piscina rejects the task of a thread that exited (process.exit) or crashed: every job of
        // the chunk that had not reported fails, except those its lane's states account for.
        const message = err instanceof Error ? err.message : String(err);
        for (const job of chunk) {
          const handler = job.threadJob.job.handler;
          job.finish(recordedOutcome(job, handler) ?? { status: 'failed', error: { message: `worker thread running ${handler} died: ${message}`, code: ErrorCodes.HANDLER_CRASH } });
        }
        port1.close();
      },
    ).finally(() => assigned.delete(chunkId));
  };

  /**
   * Sends the jobs dispatched in this turn of the event loop as one piscina task per thread instead
   * of one per event: the message round trip (structured clone, thread wake-up, piscina bookkeeping)
   * was the largest cost per event of thread isolation (docs/benchmarks.md). A lane's jobs go in a
   * chunk of their own, to the lane's thread.
   */
  const flush = () => {
    flushScheduled = false;
    const jobs = pending;
    pending = [];
    if (closed) {
      for (const { finish } of jobs) finish({ status: 'failed', error: { message: 'the worker thread pool is closed', code: ErrorCodes.ABORTED } });
      return;
    }
    const laneless: PendingJob[] = [];
    const byLane = new Map<number, { lane: BatchLane; jobs: PendingJob[] }>();
    for (const job of jobs) {
      if (job.lane === undefined) laneless.push(job);
      else {
        let group = byLane.get(job.lane.id);
        if (group === undefined) byLane.set(job.lane.id, (group = { lane: job.lane, jobs: [] }));
        group.jobs.push(job);
      }
    }
    for (const { lane, jobs: laneJobs } of byLane.values()) {
      const state = lanes.get(lane.id);
      if (state === undefined || state.stopped) {
        // Stopped in the same turn it was dispatched: never sent, never started.
        for (const { finish } of laneJobs) finish(UNSTARTED);
        continue;
      }
      state.shards ??= shardsFor(lane.limit);
      const shards = state.shards;
      // An event's runs share a unit, hence a shard; consecutive events alternate between shards.
      const byShard = shards.map((): PendingJob[] => []);
      for (const job of laneJobs) byShard[(job.threadJob.unit ?? 0) % shards.length]?.push(job);
      byShard.forEach((shardJobs, s) => {
        if (shardJobs.length === 0) return;
        const states = new Uint8Array(new SharedArrayBuffer(shardJobs.length));
        shardJobs.forEach((job, index) => {
          job.states = states;
          job.index = index;
        });
        const shard = shards[s] as Shard;
        for (const job of shardJobs) {
          job.shard = shard;
          // Fewer runs unsettled than the shard's limit: the thread has room (it runs no more than
          // we have sent and not heard back from), so the run starts now and is watched from now.
          // Otherwise only the thread knows when it starts: it says so if the watch depends on it.
          if (shard.unsettled++ < shard.limit) job.onStart?.(Date.now());
          else if (job.onStart !== undefined) job.threadJob.noticeStart = true;
        }
        sendChunk(shardJobs, { id: shard.id, limit: shard.limit, states });
      });
    }
    if (laneless.length === 0) return;
    // Every message costs a fixed ~50-100 µs (thread wake-up, a MessagePort, piscina's bookkeeping):
    // a turn's jobs are split over the threads only when each share is worth a message.
    const chunks = Math.max(1, Math.min(options.threads, Math.floor(laneless.length / MIN_JOBS_PER_CHUNK)));
    for (let c = 0; c < chunks; c++) sendChunk(chunks === 1 ? laneless : laneless.filter((_, i) => i % chunks === c), undefined);
  };

  /** Tracks a lane's unsettled runs (and watches its stop signal while it has any). */
  const enterLane = (lane: BatchLane): void => {
    let state = lanes.get(lane.id);
    if (state === undefined) {
      const laneId = lane.id;
      state = { unsettled: 0, stopWatch: undefined, shards: undefined, stopped: false };
      lanes.set(laneId, state);
      state.stopWatch = whenAborted(lane.stop, () => stopLane(laneId));
    }
    state.unsettled++;
  };
  const leaveLane = (lane: BatchLane) => {
    const state = lanes.get(lane.id);
    if (state === undefined || --state.unsettled > 0) return;
    state.stopWatch?.cancel();
    lanes.delete(lane.id);
    for (const shard of state.shards ?? []) laneThread.delete(shard.id);
  };

  return {
    queuesRuns: true,
    dispatch(job: DispatchJob, signal: AbortSignal, lane?: BatchLane, unit?: number): Promise<DispatchResult> {
      const handler = byName.get(job.handler);
      if (handler === undefined) return Promise.resolve({ status: 'failed', error: { message: `unknown handler ${job.handler}` } });
      if (signal.aborted) return Promise.resolve({ status: 'failed', error: { message: `handler ${job.handler} was aborted before it started`, code: ErrorCodes.ABORTED } });
      const taskId = nextTaskId++;
      // A lane's run may wait there: until it is known to have started, it is bounded by the batch
      // deadline alone (see flush and ThreadJobStart).
      if (lane !== undefined) enterLane(lane);
      const deadlineMs = lane !== undefined ? job.ctx.deadlineMs : effectiveDeadlineMs(handler, job, Date.now(), options.defaultTimeoutMs);
      return new Promise<DispatchResult>((resolve) => {
        let settled = false;
        let graceTimer: NodeJS.Timeout | undefined;
        const entry: PendingJob = { threadJob: unit === undefined ? { taskId, job } : { taskId, job, unit }, finish: (outcome) => finish(outcome), lane };
        const finish = (outcome: DispatchResult) => {
          if (settled) return;
          settled = true;
          entry.onStart = undefined;
          deadlineWatch.cancel();
          signalWatch.cancel();
          clearTimeout(graceTimer);
          if (lane !== undefined) leaveLane(lane);
          if (entry.shard !== undefined) entry.shard.unsettled--;
          resolve(outcome);
        };
        // The thread enforces the deadline itself; this only fires when the thread cannot answer.
        // One timer for every job with the same deadline (a batch), not one per job.
        // The thread did not answer in time: what it recorded of the run stands; else the run fails
        // and its thread is suspected of being blocked.
        const giveUp = (failure: DispatchResult) => {
          const recorded = recordedOutcome(entry, job.handler);
          if (recorded !== undefined) return finish(recorded);
          void suspectThreadOf(entry.chunkId);
          finish(failure);
        };
        const onMissedDeadline = () =>
          giveUp({ status: 'failed', error: { message: `handler ${job.handler} did not return by its deadline (worker thread blocked)`, code: ErrorCodes.HANDLER_TIMEOUT } });
        let deadlineWatch = atDeadline(systemClock, deadlineMs + graceMs, onMissedDeadline);
        if (lane !== undefined && (handler.timeoutMs ?? options.defaultTimeoutMs) !== undefined) {
          entry.onStart = (atMs) => {
            entry.onStart = undefined;
            deadlineWatch.cancel();
            deadlineWatch = atDeadline(systemClock, effectiveDeadlineMs(handler, job, atMs, options.defaultTimeoutMs) + graceMs, onMissedDeadline);
          };
        }
        const signalWatch = whenAborted(signal, (reason) => {
          // The batch's signal (deadline, shutdown): first stop the lane, so that the runs waiting
          // behind this one do not start in the moment before their own abort arrives.
          if (lane !== undefined) stopLane(lane.id);
          const code = (reason as { code?: unknown } | undefined)?.code;
          channel.postMessage({ type: 'abort', taskId, code: typeof code === 'string' ? code : undefined } satisfies ChannelMessage);
          graceTimer = setTimeout(() => giveUp({ status: 'failed', error: { message: `handler ${job.handler} was aborted (shutdown)`, code: ErrorCodes.ABORTED } }), graceMs);
        });
        pending.push(entry);
        if (!flushScheduled) {
          flushScheduled = true;
          setImmediate(flush);
        }
      });
    },
    async warmUp() {
      await pool.run({ chunkId: 0, warmUp: true } satisfies ThreadTask);
    },
    async close() {
      if (closed) return;
      closed = true;
      channel.close();
      // Everything still running is past its drain: end the threads rather than wait for them.
      await pool.destroy();
    },
  };
}
