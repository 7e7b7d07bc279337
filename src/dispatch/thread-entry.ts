/**
 * The module piscina runs in every worker thread (`dist/dispatch/thread-entry.js` in production,
 * this file through tsx under vitest). It loads the handler set once per thread with the same
 * loader as the main thread, then runs the jobs of each task (a chunk of handler runs, see
 * thread-pool.ts) at once: the main thread hands over only runs that may start.
 *
 * Aborts and liveness travel on a BroadcastChannel instead of piscina's `signal` option, because
 * piscina does not let abortable tasks share a thread: with I/O-bound handlers one thread serves
 * many events at once, so a run is aborted cooperatively here (its `ctx.signal`), and the main
 * thread terminates a thread only when it stops answering pings (a handler blocking its loop).
 */
import { threadId, workerData } from 'node:worker_threads';
import { loadHandlerSet } from '../handlers/handler-set.js';
import { setUpHandlers, tearDownHandlers } from '../handlers/life-cycle.js';
import type { LoadedHandler } from '../handlers/loader.js';
import { threadLogDestination } from '../observability/handler-log-tap.js';
import { createLogger } from '../observability/logger.js';
import { CellMap } from '../runtime/cell-map.js';
import { startTracing } from '../tracing/index.js';
import { startHandlerRun } from './run-handler.js';
import { RUN_FAILED, RUN_OK, RUN_PERMANENT, RUN_RUNNING, type ChannelMessage, type ThreadJob, type ThreadJobOutcome, type ThreadTask, type ThreadWorkerData } from './thread-protocol.js';
import type { DispatchOutcome, DispatchResult } from './types.js';

const data = workerData as ThreadWorkerData;

// fd 1, and a development console's channel when `dev` runs one (observability/handler-log-tap.ts).
const logger = createLogger({ level: data.logLevel, pretty: false, base: { thread: threadId }, destination: threadLogDestination() });
const childLogger = (bindings: Record<string, unknown>) => logger.child(bindings);

/** Task id -> the abort of its run, while it runs. */
const aborts = new CellMap<number, (reason: unknown) => void>();
const channel = new BroadcastChannel(data.channelName);
channel.onmessage = (message: unknown) => {
  const payload = (message as { data: ChannelMessage }).data;
  if (payload.type === 'abort') {
    for (const taskId of payload.taskIds) aborts.get(taskId)?.({ code: payload.code });
  } else if (payload.type === 'ping') channel.postMessage({ type: 'pong', nonce: payload.nonce, threadId } satisfies ChannelMessage);
  else if (payload.type === 'teardown') void tearDown(payload.timeoutMs);
  else if (payload.type === 'flush') {
    const answer = () => channel.postMessage({ type: 'flushed', nonce: payload.nonce, threadId } satisfies ChannelMessage);
    tracingStarted.then((tracing) => tracing.flush()).then(answer, answer);
  }
};
// The channel must not keep an idle thread alive: piscina owns the thread's lifetime.
(channel as unknown as { unref?: () => void }).unref?.();

const messageOf = (err: unknown) => (err instanceof Error ? err.message : String(err));

// `--otel`: this thread's own SDK and context manager, before the handlers load (their own
// instrumentation finds it); the main thread passes each run's span context with its job.
const tracingStarted = startTracing({ enabled: data.otel });
const loaded = tracingStarted.then(() => loadHandlerSet({ handlersDir: data.handlersDir, forward: data.forward }));
/**
 * The handler set once every handler's setup succeeded in this thread (retried with backoff; each
 * failure told to the main thread, which logs it and keeps /readyz at 503): no run starts before.
 */
const handlersPromise: Promise<Map<string, LoadedHandler>> = loaded.then(async (handlers) => {
  await setUpHandlers(handlers, {
    logger: childLogger,
    onFailure: (f) => channel.postMessage({ type: 'setup-failed', threadId, handler: f.handler, message: messageOf(f.error), attempt: f.attempt, retryInMs: f.retryInMs } satisfies ChannelMessage),
  });
  channel.postMessage({ type: 'setup-done', threadId } satisfies ChannelMessage);
  return new Map(handlers.map((h) => [h.name, h]));
});
// An unobserved rejection would kill the thread before the first task can report it.
loaded.catch(() => {});
handlersPromise.catch(() => {});

/** At drain (the main thread asks once): this thread's teardowns, then a report. */
async function tearDown(timeoutMs: number): Promise<void> {
  const handlers = await loaded.catch((): LoadedHandler[] => []);
  const failures = await tearDownHandlers(handlers, { logger: childLogger, timeoutMs });
  channel.postMessage({ type: 'torn-down', threadId, failures: failures.map((f) => ({ handler: f.handler, message: messageOf(f.error) })) } satisfies ChannelMessage);
}

/**
 * Chunks with outcomes not posted yet. A new chunk posts them before its handlers start: a handler
 * that blocks its thread for good would otherwise hold back outcomes of runs that did finish (the
 * main thread could fall back on their states, but not on their error messages).
 */
const unposted = new CellMap<number, () => void>();
/** Keys of `unposted`: one per chunk being run. */
let nextChunkRun = 1;
function postUnposted(): void {
  for (const post of unposted.values()) post();
}

const UNSTARTED: DispatchResult = Object.freeze({ status: 'unstarted' });

/** One job of a chunk, from its start to its reported outcome (the receiver of its handler run). */
class ThreadRun {
  readonly #chunk: ChunkRun;
  readonly #threadJob: ThreadJob;
  readonly #index: number;
  readonly #startedAt = performance.now();

  constructor(chunk: ChunkRun, threadJob: ThreadJob, index: number) {
    this.#chunk = chunk;
    this.#threadJob = threadJob;
    this.#index = index;
  }

  start(handlers: Map<string, LoadedHandler>): void {
    const { taskId, job } = this.#threadJob;
    // A run whose lease deadline passed on its way never starts: the lease requeues it.
    if (Date.now() >= job.ctx.deadlineMs) return this.#chunk.report({ taskId, outcome: UNSTARTED });
    const handler = handlers.get(job.handler);
    if (handler === undefined) return this.end({ status: 'failed', error: { message: `unknown handler ${job.handler} in worker thread` } });
    // Before the handler can run (and perhaps kill or block the thread): the main thread reads the
    // states when outcomes do not come.
    Atomics.store(this.#chunk.states, this.#index, RUN_RUNNING);
    const abortOn = (abort: (reason: unknown) => void) => {
      aborts.set(taskId, abort);
      return { cancel: () => aborts.delete(taskId) };
    };
    startHandlerRun(handler, job, { abortOn, logger: childLogger, defaultTimeoutMs: data.defaultTimeoutMs }, this);
  }

  end(outcome: DispatchOutcome): void {
    // A batch call with per-event results has some event not ok: recorded as failed should its outcome be lost.
    const ok = outcome.status === 'ok' && outcome.results === undefined;
    Atomics.store(this.#chunk.states, this.#index, ok ? RUN_OK : outcome.status === 'permanent' ? RUN_PERMANENT : RUN_FAILED);
    // Timed here: the main thread would count the trip to and from the thread as handler time.
    this.#chunk.report({ taskId: this.#threadJob.taskId, outcome: { ...outcome, durationMs: performance.now() - this.#startedAt } });
  }
}

/** A chunk being run: reports each job's outcome once, a turn's worth per message. */
class ChunkRun {
  readonly states: Uint8Array;
  readonly #port: import('node:worker_threads').MessagePort;
  readonly #jobs: number;
  readonly #key = nextChunkRun++;
  readonly #allReported: () => void;
  #unsent: ThreadJobOutcome[] = [];
  #reported = 0;
  #timer: NodeJS.Immediate | undefined = undefined;

  constructor(task: Extract<ThreadTask, { jobs: ThreadJob[] }>, allReported: () => void) {
    this.states = task.states;
    this.#port = task.port;
    this.#jobs = task.jobs.length;
    this.#allReported = allReported;
  }

  report(outcome: ThreadJobOutcome): void {
    this.#unsent.push(outcome);
    // The last outcomes travel with the task's result instead of a message of their own.
    if (++this.#reported === this.#jobs) return this.#allReported();
    if (this.#timer !== undefined) return;
    this.#timer = setImmediate(() => this.post());
    unposted.set(this.#key, () => this.post());
  }

  post(): void {
    if (this.#timer !== undefined) clearImmediate(this.#timer);
    this.#timer = undefined;
    unposted.delete(this.#key);
    if (this.#unsent.length === 0) return;
    this.#port.postMessage(this.#unsent);
    this.#unsent = [];
  }

  /** Every job reported: what was not posted yet, for the task's result. */
  takeUnsent(): ThreadJobOutcome[] {
    const unsent = this.#unsent;
    this.#unsent = [];
    return unsent;
  }

  close(): void {
    if (this.#timer !== undefined) clearImmediate(this.#timer);
    unposted.delete(this.#key);
    this.#port.close();
  }
}

/**
 * Runs a chunk's jobs, all at once. Outcomes go back on the chunk's port as they finish, batched per
 * turn of this thread's event loop (fast handlers finish together: one message for all of them);
 * those of the last turn travel with the task's result instead, so a chunk of fast jobs costs no port
 * message at all. Each outcome is sent exactly once.
 */
export default async function runTask(task: ThreadTask): Promise<ThreadJobOutcome[]> {
  // The warm-up proves the handlers load; their setup may still be retrying (readiness waits for it).
  if (!('jobs' in task)) {
    await loaded;
    return [];
  }
  const handlers = await handlersPromise;
  if (task.jobs.length === 0) {
    task.port.close();
    return [];
  }
  let allReported!: () => void;
  const done = new Promise<void>((resolve) => (allReported = resolve));
  const chunk = new ChunkRun(task, allReported);
  try {
    postUnposted();
    task.jobs.forEach((threadJob, i) => new ThreadRun(chunk, threadJob, i).start(handlers));
    await done;
    return chunk.takeUnsent();
  } finally {
    chunk.close();
  }
}
