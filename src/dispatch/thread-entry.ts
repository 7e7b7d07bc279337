/**
 * The module piscina runs in every worker thread (`dist/dispatch/thread-entry.js` in production,
 * this file through tsx under vitest). It loads the handler set once per thread with the same
 * loader as the main thread, then runs the jobs of each task (a chunk of handler runs, see thread-pool.ts).
 *
 * Aborts and liveness travel on a BroadcastChannel instead of piscina's `signal` option, because
 * piscina does not let abortable tasks share a thread: with I/O-bound handlers one thread serves
 * many events at once, so a task is aborted cooperatively here (its `ctx.signal`), and the main
 * thread terminates a thread only when it stops answering pings (a handler blocking its loop).
 */
import { threadId, workerData } from 'node:worker_threads';
import { loadHandlerSet } from '../handlers/handler-set.js';
import type { LoadedHandler } from '../handlers/loader.js';
import { threadLogDestination } from '../observability/handler-log-tap.js';
import { createLogger } from '../observability/logger.js';
import { runHandler } from './run-handler.js';
import { RUN_FAILED, RUN_OK, RUN_PERMANENT, RUN_RUNNING, type ChannelMessage, type ThreadJob, type ThreadJobOutcome, type ThreadJobStart, type ThreadTask, type ThreadWorkerData } from './thread-protocol.js';
import type { DispatchOutcome, DispatchResult } from './types.js';

const data = workerData as ThreadWorkerData;

// fd 1, and a development console's channel when `dev` runs one (observability/handler-log-tap.ts).
const logger = createLogger({ level: data.logLevel, pretty: false, base: { thread: threadId }, destination: threadLogDestination() });
const childLogger = (bindings: Record<string, unknown>) => logger.child(bindings);

/**
 * A long-lived Map whose entries come and go, holding each value in a cell that is emptied when
 * its entry leaves. V8 leaves a rehashed table behind in the old generation still pointing at what
 * it held, and the scavenger takes those pointers as live until a major collection (thread-pool.ts,
 * PendingJob): held directly, every run and its event survived that long. An emptied cell pins
 * nothing (and the keys here are numbers).
 */
class CellMap<K, V> {
  readonly #cells = new Map<K, { value: V | undefined }>();

  get(key: K): V | undefined {
    return this.#cells.get(key)?.value;
  }

  set(key: K, value: V): void {
    this.#cells.set(key, { value });
  }

  delete(key: K): void {
    const cell = this.#cells.get(key);
    if (cell === undefined) return;
    cell.value = undefined;
    this.#cells.delete(key);
  }

  values(): V[] {
    const values: V[] = [];
    for (const { value } of this.#cells.values()) if (value !== undefined) values.push(value);
    return values;
  }
}

/** Task id -> the abort of its run, while it runs. */
const aborts = new CellMap<number, (reason: unknown) => void>();
const channel = new BroadcastChannel(data.channelName);
channel.onmessage = (message: unknown) => {
  const payload = (message as { data: ChannelMessage }).data;
  if (payload.type === 'abort') {
    if (!dropQueued(payload.taskId)) aborts.get(payload.taskId)?.({ code: payload.code });
  } else if (payload.type === 'stop-lane') stopLane(payload.laneId);
  else if (payload.type === 'ping') channel.postMessage({ type: 'pong', nonce: payload.nonce, threadId } satisfies ChannelMessage);
};
// The channel must not keep an idle thread alive: piscina owns the thread's lifetime.
(channel as unknown as { unref?: () => void }).unref?.();

const handlersPromise: Promise<Map<string, LoadedHandler>> = loadHandlerSet({ handlersDir: data.handlersDir, forward: data.forward }).then(
  (handlers) => new Map(handlers.map((h) => [h.name, h])),
);
// An unobserved rejection would kill the thread before the first task can report it.
handlersPromise.catch(() => {});

function runJob(handlers: Map<string, LoadedHandler>, { taskId, job }: ThreadJob): Promise<DispatchOutcome> {
  const handler = handlers.get(job.handler);
  if (handler === undefined) return Promise.resolve({ status: 'failed', error: { message: `unknown handler ${job.handler} in worker thread` } });
  const abortOn = (abort: (reason: unknown) => void) => {
    aborts.set(taskId, abort);
    return { cancel: () => aborts.delete(taskId) };
  };
  return runHandler(handler, job, { abortOn, logger: childLogger, defaultTimeoutMs: data.defaultTimeoutMs });
}

/** A chunk being run: reports each job's outcome once (see runTask). */
interface ChunkRun {
  handlers: Map<string, LoadedHandler>;
  report(done: ThreadJobOutcome): void;
  /** Tells the main thread at once that a run it asked about has started (see ThreadJobStart). */
  noticeStart(taskId: number): void;
  states: Uint8Array | undefined;
}

/** The runs of one event waiting in a lane; `indexes` are the jobs' positions in their chunk. */
interface QueuedUnit {
  unit: number;
  jobs: ThreadJob[];
  indexes: number[];
  chunk: ChunkRun;
}

/** A batch's runs in this thread (see BatchLane): events running, and those waiting for a slot. */
interface LaneState {
  id: number;
  limit: number;
  /** Unit (event) -> its runs still going. */
  running: Map<number, number>;
  queue: QueuedUnit[];
}

/**
 * Chunks with outcomes not posted yet. A new chunk posts them before its handlers start: a handler
 * that blocks its thread for good would otherwise hold back outcomes of runs that did finish (for a
 * lane's runs the main thread can fall back on their states, but not on their error messages).
 */
const unposted = new CellMap<number, () => void>();
/** Keys of `unposted`: one per chunk being run. */
let nextChunkRun = 1;
function postUnposted(): void {
  for (const post of unposted.values()) post();
}

const lanes = new Map<number, LaneState>();
/**
 * Lanes stopped (drain, the batch deadline): chunks of theirs still on the way start nothing. The
 * latest ones only: a chunk arrives moments after its lane was stopped, not thousands of lanes later.
 */
const stoppedLanes = new Set<number>();
const STOPPED_LANES_KEPT = 1_024;
/** Task id -> its lane, while it waits there (an abort then drops it instead of aborting a run). */
const queuedTasks = new CellMap<number, LaneState>();

const UNSTARTED: DispatchResult = Object.freeze({ status: 'unstarted' });

function startJob(chunk: ChunkRun, threadJob: ThreadJob, index: number, onEnd: () => void): void {
  // Before the handler can run (and perhaps kill or block the thread): the main thread reads the
  // states when outcomes do not come.
  const states = chunk.states;
  if (states !== undefined) Atomics.store(states, index, RUN_RUNNING);
  if (threadJob.noticeStart === true) chunk.noticeStart(threadJob.taskId);
  const startedAt = performance.now();
  void runJob(chunk.handlers, threadJob).then((outcome) => {
    if (states !== undefined) Atomics.store(states, index, outcome.status === 'ok' ? RUN_OK : outcome.status === 'permanent' ? RUN_PERMANENT : RUN_FAILED);
    // Timed here: on the main thread the time a run waited in its lane would count as handler time.
    chunk.report({ taskId: threadJob.taskId, outcome: { ...outcome, durationMs: performance.now() - startedAt } });
    onEnd();
  });
}

function startUnit(lane: LaneState, queued: QueuedUnit): void {
  // A run whose batch deadline passed while it waited never starts: the batch requeues it.
  if (Date.now() >= (queued.jobs[0] as ThreadJob).job.ctx.deadlineMs) {
    for (const threadJob of queued.jobs) queued.chunk.report({ taskId: threadJob.taskId, outcome: UNSTARTED });
    return;
  }
  lane.running.set(queued.unit, (lane.running.get(queued.unit) ?? 0) + queued.jobs.length);
  const onEnd = () => {
    const left = (lane.running.get(queued.unit) as number) - 1;
    if (left > 0) lane.running.set(queued.unit, left);
    else lane.running.delete(queued.unit);
    pumpLane(lane);
  };
  queued.jobs.forEach((threadJob, j) => startJob(queued.chunk, threadJob, queued.indexes[j] as number, onEnd));
}

/**
 * Starts waiting units as slots free up, at once. Outcomes of runs that ended this turn are posted
 * with the turn (a message per turn, not per run); should a unit started now block the thread for
 * good, the main thread still learns how those runs ended from their states (ThreadLane.states).
 */
function pumpLane(lane: LaneState): void {
  while (lane.queue.length > 0 && lane.running.size < lane.limit) {
    const next = lane.queue.shift() as QueuedUnit;
    for (const threadJob of next.jobs) queuedTasks.delete(threadJob.taskId);
    startUnit(lane, next);
  }
  if (lane.running.size === 0 && lane.queue.length === 0) lanes.delete(lane.id);
}

/** Admits a lane chunk's units in order: each starts now if its event has a slot, else waits. */
function admit(laneId: number, limit: number, chunk: ChunkRun, jobs: readonly ThreadJob[]): void {
  if (stoppedLanes.has(laneId)) {
    for (const threadJob of jobs) chunk.report({ taskId: threadJob.taskId, outcome: UNSTARTED });
    return;
  }
  let lane = lanes.get(laneId);
  if (lane === undefined) {
    lane = { id: laneId, limit, running: new Map(), queue: [] };
    lanes.set(laneId, lane);
  }
  // The runs of one event are dispatched in one go, so they sit side by side in the chunk.
  for (let i = 0; i < jobs.length; ) {
    const unit = (jobs[i] as ThreadJob).unit ?? -1 - i;
    const queued: QueuedUnit = { unit, jobs: [], indexes: [], chunk };
    for (; i < jobs.length && ((jobs[i] as ThreadJob).unit ?? -1 - i) === unit; i++) {
      queued.jobs.push(jobs[i] as ThreadJob);
      queued.indexes.push(i);
    }
    if (lane.queue.length === 0 && (lane.running.size < lane.limit || lane.running.has(unit))) startUnit(lane, queued);
    else {
      lane.queue.push(queued);
      for (const threadJob of queued.jobs) queuedTasks.set(threadJob.taskId, lane);
    }
  }
  if (lane.running.size === 0 && lane.queue.length === 0) lanes.delete(laneId);
}

/** An abort for a run still waiting in its lane: it ends `unstarted`. False when it is not waiting. */
function dropQueued(taskId: number): boolean {
  const lane = queuedTasks.get(taskId);
  if (lane === undefined) return false;
  queuedTasks.delete(taskId);
  for (let u = 0; u < lane.queue.length; u++) {
    const queued = lane.queue[u] as QueuedUnit;
    const j = queued.jobs.findIndex((threadJob) => threadJob.taskId === taskId);
    if (j === -1) continue;
    queued.jobs.splice(j, 1);
    queued.indexes.splice(j, 1);
    if (queued.jobs.length === 0) lane.queue.splice(u, 1);
    queued.chunk.report({ taskId, outcome: UNSTARTED });
    break;
  }
  pumpLane(lane);
  return true;
}

function stopLane(laneId: number): void {
  stoppedLanes.add(laneId);
  if (stoppedLanes.size > STOPPED_LANES_KEPT) stoppedLanes.delete(stoppedLanes.values().next().value as number);
  const lane = lanes.get(laneId);
  if (lane === undefined) return;
  const dropped = lane.queue;
  lane.queue = [];
  for (const queued of dropped) {
    for (const threadJob of queued.jobs) {
      queuedTasks.delete(threadJob.taskId);
      queued.chunk.report({ taskId: threadJob.taskId, outcome: UNSTARTED });
    }
  }
  if (lane.running.size === 0) lanes.delete(laneId);
}

/**
 * Runs a chunk's jobs: all at once, or for a lane's chunk as the lane's limit allows (runs that wait
 * start here as others end, with no round trip through the main thread). Outcomes go back on the
 * chunk's port as they finish, batched per turn of this thread's event loop (fast handlers finish
 * together: one message for all of them); those of the last turn travel with the task's result
 * instead, so a chunk of fast jobs costs no port message at all. Each outcome is sent exactly once.
 */
export default async function runTask(task: ThreadTask): Promise<ThreadJobOutcome[]> {
  const handlers = await handlersPromise;
  if (!('jobs' in task)) return [];
  const { port, jobs } = task;
  const run = nextChunkRun++;
  let unsent: ThreadJobOutcome[] = [];
  let timer: NodeJS.Immediate | undefined;
  const post = () => {
    if (timer !== undefined) clearImmediate(timer);
    timer = undefined;
    unposted.delete(run);
    if (unsent.length === 0) return;
    port.postMessage(unsent);
    unsent = [];
  };
  let reported = 0;
  let allReported!: () => void;
  const done = new Promise<void>((resolve) => (allReported = resolve));
  const chunk: ChunkRun = {
    handlers,
    states: task.lane?.states,
    noticeStart(taskId) {
      // Now, not with the turn's outcomes: the handler about to run may block this thread for good.
      port.postMessage({ startedTaskId: taskId, atMs: Date.now() } satisfies ThreadJobStart);
    },
    report(outcome) {
      unsent.push(outcome);
      if (++reported === jobs.length) {
        allReported();
        return;
      }
      if (timer !== undefined) return;
      timer = setImmediate(post);
      unposted.set(run, post);
    },
  };
  try {
    if (jobs.length === 0) return [];
    postUnposted();
    if (task.lane === undefined) jobs.forEach((threadJob, i) => startJob(chunk, threadJob, i, () => {}));
    else admit(task.lane.id, task.lane.limit, chunk, jobs);
    await done;
    return unsent;
  } finally {
    if (timer !== undefined) clearImmediate(timer);
    unposted.delete(run);
    port.close();
  }
}
