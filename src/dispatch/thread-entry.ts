/**
 * The module piscina runs in every worker thread (`dist/dispatch/thread-entry.js` in production,
 * this file through tsx under vitest). It loads the handler set once per thread with the same
 * loader as the main thread, then runs the jobs of each message on its link (the runs the main
 * thread started in one turn, see thread-link.ts) at once: the main thread hands over only runs that
 * may start.
 *
 * Aborts and liveness travel on a BroadcastChannel instead of piscina's `signal` option, because
 * piscina does not let abortable tasks share a thread: with I/O-bound handlers one thread serves
 * many events at once, so a run is aborted cooperatively here (its `ctx.signal`), and the main
 * thread terminates a thread only when it stops answering pings (a handler blocking its loop).
 */
import { MessageChannel, parentPort, threadId, workerData } from 'node:worker_threads';
import { loadHandlerSet } from '../handlers/handler-set.js';
import { setUpHandlers, tearDownHandlers } from '../handlers/life-cycle.js';
import type { LoadedHandler } from '../handlers/loader.js';
import { threadLogDestination } from '../observability/handler-log-tap.js';
import { createLogger } from '../observability/logger.js';
import { CellMap } from '../runtime/cell-map.js';
import { startTracing } from '../tracing/index.js';
import { startHandlerRun } from './run-handler.js';
import { RUN_FAILED, RUN_OK, RUN_PERMANENT, RUN_RUNNING, type ChannelMessage, type LinkMessage, type RunsMessage, type ThreadJob, type ThreadJobOutcome, type ThreadTask, type ThreadWorkerData } from './thread-protocol.js';
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

/** Handlers by name once set up (a run message before that waits for `handlersPromise`). */
let readyHandlers: Map<string, LoadedHandler> | undefined;
void handlersPromise.then((handlers) => (readyHandlers = handlers));

const UNSTARTED: DispatchResult = Object.freeze({ status: 'unstarted' });

/**
 * This thread's link to the main thread (thread-link.ts): made here, its other end sent to the pool
 * once. Runs come in on it; outcomes go back on it, a turn's worth per message (fast handlers finish
 * together: one message for all of them).
 */
const link = new MessageChannel();
(parentPort as NonNullable<typeof parentPort>).postMessage({ type: 'durable-worker:link', threadId, port: link.port2 } satisfies LinkMessage, [link.port2]);
link.port1.on('message', (message: RunsMessage) => {
  // Outcomes of runs that did finish go first: a new handler that blocks this thread for good would
  // hold them back (the main thread could fall back on their states, but not on their error messages).
  postOutcomes();
  if (readyHandlers !== undefined) startRuns(message, readyHandlers);
  else void handlersPromise.then((handlers) => startRuns(message, handlers));
});
// Piscina owns the thread's lifetime: the link must not keep an idle thread alive.
link.port1.unref();

let unsent: ThreadJobOutcome[] = [];
let postScheduled: NodeJS.Immediate | undefined;

function report(outcome: ThreadJobOutcome): void {
  unsent.push(outcome);
  postScheduled ??= setImmediate(postOutcomes);
}

function postOutcomes(): void {
  if (postScheduled !== undefined) clearImmediate(postScheduled);
  postScheduled = undefined;
  if (unsent.length === 0) return;
  link.port1.postMessage(unsent);
  unsent = [];
}

function startRuns({ jobs, states }: RunsMessage, handlers: Map<string, LoadedHandler>): void {
  for (let i = 0; i < jobs.length; i++) new ThreadRun(jobs[i] as ThreadJob, states, i).start(handlers);
}

/** One job, from its start to its reported outcome (the receiver of its handler run). */
class ThreadRun {
  readonly #threadJob: ThreadJob;
  /** Its state in shared memory (RUN_*), at `#index`. */
  readonly #states: Uint8Array;
  readonly #index: number;
  readonly #startedAt = performance.now();

  constructor(threadJob: ThreadJob, states: Uint8Array, index: number) {
    this.#threadJob = threadJob;
    this.#states = states;
    this.#index = index;
  }

  start(handlers: Map<string, LoadedHandler>): void {
    const { taskId, job } = this.#threadJob;
    // A run whose lease deadline passed on its way never starts: the lease requeues it.
    if (Date.now() >= job.ctx.deadlineMs) return report({ taskId, outcome: UNSTARTED });
    const handler = handlers.get(job.handler);
    if (handler === undefined) return this.end({ status: 'failed', error: { message: `unknown handler ${job.handler} in worker thread` } });
    // Before the handler can run (and perhaps kill or block the thread): the main thread reads the
    // states when outcomes do not come.
    Atomics.store(this.#states, this.#index, RUN_RUNNING);
    const abortOn = (abort: (reason: unknown) => void) => {
      aborts.set(taskId, abort);
      return { cancel: () => aborts.delete(taskId) };
    };
    startHandlerRun(handler, job, { abortOn, logger: childLogger, defaultTimeoutMs: data.defaultTimeoutMs }, this);
  }

  end(outcome: DispatchOutcome): void {
    // A batch call with per-event results has some event not ok: recorded as failed should its outcome be lost.
    const ok = outcome.status === 'ok' && outcome.results === undefined;
    Atomics.store(this.#states, this.#index, ok ? RUN_OK : outcome.status === 'permanent' ? RUN_PERMANENT : RUN_FAILED);
    // Timed here: the main thread would count the trip to and from the thread as handler time.
    report({ taskId: this.#threadJob.taskId, outcome: { ...outcome, durationMs: performance.now() - this.#startedAt } });
  }
}

/** The one piscina task, the warm-up: proves the handlers load (their setup may still be retrying; readiness waits for it). */
export default async function runTask(task: ThreadTask): Promise<void> {
  if (task.warmUp) await loaded;
}
