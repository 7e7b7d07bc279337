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
import { captureConsole } from '../observability/console-capture.js';
import { createLogger } from '../observability/logger.js';
import { CellMap } from '../runtime/cell-map.js';
import { startTracing } from '../tracing/index.js';
import { transactionsOnFirstUse } from './call-transaction.js';
import { startHandlerCall } from './run-handler.js';
import {
  jobAt,
  leaderAt,
  NO_LEADER,
  OutcomesWriter,
  RUN_FAILED,
  RUN_OK,
  RUN_PERMANENT,
  RUN_RUNNING,
  RUN_WAITING,
  type ChannelMessage,
  type LinkMessage,
  type RunsMessage,
  type RunReport,
  type ThreadTask,
  type ThreadWorkerData,
} from './thread-protocol.js';
import type { DispatchJob, CallOutcome, DispatchResult } from './types.js';

const data = workerData as ThreadWorkerData;

// fd 1, and a development console's channel when `dev` runs one (observability/handler-log-tap.ts).
const logger = createLogger({ level: data.logLevel, pretty: false, base: { thread: threadId }, destination: threadLogDestination(data.logLevel) });
const childLogger = (bindings: Record<string, unknown>) => logger.child(bindings);
// A handler's console.* lines: records of its run, like ctx.log's (outside a run: this thread's).
captureConsole(logger.child({ component: 'handlers' }));

/** Task id -> the abort of its run, while it runs. */
const aborts = new CellMap<number, (reason: unknown) => void>();
const channel = new BroadcastChannel(data.channelName);
/**
 * What this thread tells the main thread goes on parentPort, the channel being only for what the main
 * thread tells every thread: a channel message reaches every other thread too, and the first message
 * a thread (or the main thread) receives on a channel costs it the load of Node's bundled undici, for
 * its MessageEvent, tens of ms at start-up on a busy host (docs/benchmarks.md#cold-start); a
 * `message` listener of a port, as piscina's on the thread, builds no event.
 */
const toMain = (message: ChannelMessage) => (parentPort as NonNullable<typeof parentPort>).postMessage(message);
/** Transactional handlers: this thread's own connections to the store's database (call-transaction.ts). */
const transactions = data.transactions === undefined ? undefined : transactionsOnFirstUse(data.transactions).open;
channel.onmessage = (message: unknown) => {
  const payload = (message as { data: ChannelMessage }).data;
  if (payload.type === 'abort') {
    for (const taskId of payload.taskIds) aborts.get(taskId)?.({ code: payload.code });
  } else if (payload.type === 'ping') toMain({ type: 'pong', nonce: payload.nonce, threadId } satisfies ChannelMessage);
  else if (payload.type === 'teardown') void tearDown(payload.timeoutMs);
  else if (payload.type === 'flush') {
    const answer = () => toMain({ type: 'flushed', nonce: payload.nonce, threadId } satisfies ChannelMessage);
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
    onFailure: (f) =>
      toMain({
        type: 'setup-failed',
        threadId,
        handler: f.handler,
        message: messageOf(f.error),
        attempt: f.attempt,
        retryInMs: f.retryInMs,
      } satisfies ChannelMessage),
  });
  toMain({ type: 'setup-done', threadId } satisfies ChannelMessage);
  return new Map(handlers.map((h) => [h.name, h]));
});
// An unobserved rejection would kill the thread before the first task can report it.
loaded.catch(() => {});
handlersPromise.catch(() => {});

/** At drain (the main thread asks once): this thread's teardowns, then a report. */
async function tearDown(timeoutMs: number): Promise<void> {
  const handlers = await loaded.catch((): LoadedHandler[] => []);
  const failures = await tearDownHandlers(handlers, { logger: childLogger, timeoutMs });
  toMain({ type: 'torn-down', threadId, failures: failures.map((f) => ({ handler: f.handler, message: messageOf(f.error) })) } satisfies ChannelMessage);
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

/** Outcomes not posted yet; posted a turn's worth at a time. */
const unsent = new OutcomesWriter();
let postScheduled: NodeJS.Immediate | undefined;

/** A run ended ok with nothing more to say. */
function reportOk(taskId: number, durationMs: number): void {
  unsent.ok(taskId, durationMs);
  postScheduled ??= setImmediate(postOutcomes);
}

function report(taskId: number, reported: RunReport): void {
  unsent.other(taskId, reported);
  postScheduled ??= setImmediate(postOutcomes);
}

function postOutcomes(): void {
  if (postScheduled !== undefined) clearImmediate(postScheduled);
  postScheduled = undefined;
  if (!unsent.empty) link.port1.postMessage(unsent.take());
}

/**
 * Runs started here and not ended, and followers waiting for theirs, by task id: where a follower
 * finds its leader (a subject's chain can wait here several deep).
 */
const leaders = new Map<number, ThreadRun>();
/**
 * Task ids of the runs that ended ok here lately, oldest first: a follower that comes after its
 * leader ended (their messages crossed: the main thread chained a lease that arrived late) starts
 * at once instead of a round trip through the main thread. Bounded: one older than that is missed.
 */
const recentlyOk = new Set<number>();
const RECENTLY_OK_KEPT = 4_096;

function startRuns(message: RunsMessage, handlers: Map<string, LoadedHandler>): void {
  for (let i = 0; i < message.events.length; i++) {
    const taskId = message.firstTaskId + i;
    const run = new ThreadRun(taskId, jobAt(message, i), message.states, i, handlers);
    const leaderId = leaderAt(message, i);
    if (leaderId === NO_LEADER) run.start();
    else {
      const leader = leaders.get(leaderId);
      if (leader === undefined) {
        // The leader ended before its follower came: ok lately, it may start; else the main thread decides.
        if (recentlyOk.has(leaderId)) run.start();
        else report(taskId, { outcome: UNSTARTED, missed: true });
      } else {
        leader.follower = run;
        leaders.set(taskId, run);
      }
    }
  }
}

/** One job, from its start to its reported outcome (the receiver of its handler run). */
class ThreadRun {
  readonly #taskId: number;
  readonly #job: DispatchJob;
  /** Its state in shared memory (RUN_*), at `#index`. */
  readonly #states: Uint8Array;
  readonly #index: number;
  readonly #handlers: Map<string, LoadedHandler>;
  #startedAt = 0;
  /** The run to start when this one ends ok (the next event of its subject). */
  follower: ThreadRun | undefined = undefined;

  constructor(taskId: number, job: DispatchJob, states: Uint8Array, index: number, handlers: Map<string, LoadedHandler>) {
    this.#taskId = taskId;
    this.#job = job;
    this.#states = states;
    this.#index = index;
    this.#handlers = handlers;
  }

  start(): void {
    const taskId = this.#taskId;
    const job = this.#job;
    // A run whose lease deadline passed on its way never starts: the lease requeues it.
    if (Date.now() >= job.ctx.leaseDeadlineMs) return this.#unstarted();
    // Before the handler can run (and perhaps kill or block the thread): the main thread reads the
    // states when outcomes do not come. A run it withdrew never starts, nor do the ones behind it
    // (it withdraws them as it drops them).
    if (Atomics.compareExchange(this.#states, this.#index, RUN_WAITING, RUN_RUNNING) !== RUN_WAITING) {
      leaders.delete(taskId);
      return;
    }
    this.#startedAt = performance.now();
    leaders.set(taskId, this);
    const handler = this.#handlers.get(job.handler);
    if (handler === undefined) return this.end({ status: 'failed', error: { message: `unknown handler ${job.handler} in worker thread` } });
    const abortOn = (abort: (reason: unknown) => void) => {
      aborts.set(taskId, abort);
      return { cancel: () => aborts.delete(taskId) };
    };
    startHandlerCall(handler, job, { abortOn, logger: childLogger, defaultTimeoutMs: data.defaultTimeoutMs, transactions }, this);
  }

  end(outcome: CallOutcome): void {
    // A batch call with per-event results has some event not ok: recorded as failed should its outcome be lost.
    const ok = outcome.status === 'ok' && outcome.results === undefined;
    // A duplicate (a transactional call another worker committed first) travels as an outcome of its own.
    const plainOk = ok && outcome.duplicate === undefined;
    Atomics.store(this.#states, this.#index, ok ? RUN_OK : outcome.status === 'permanent' ? RUN_PERMANENT : RUN_FAILED);
    // Timed here: the main thread would count the trip to and from the thread as handler time.
    const taskId = this.#taskId;
    const durationMs = performance.now() - this.#startedAt;
    if (plainOk) reportOk(taskId, durationMs);
    else report(taskId, { outcome: { ...outcome, durationMs } });
    leaders.delete(taskId);
    if (ok) {
      recentlyOk.add(taskId);
      if (recentlyOk.size > RECENTLY_OK_KEPT) recentlyOk.delete(recentlyOk.values().next().value as number);
    }
    const follower = this.follower;
    if (follower === undefined) return;
    this.follower = undefined;
    // Its state was stored above, before the follower's: a main thread that finds the follower
    // started knows this run ended ok.
    if (ok) follower.start();
    else follower.#unstarted();
  }

  /**
   * Never started (its deadline passed, or its leader did not end ok), nor will the ones chained
   * behind it. A run the main thread withdrew is not reported (it ended there already).
   */
  #unstarted(): void {
    leaders.delete(this.#taskId);
    if (Atomics.load(this.#states, this.#index) === RUN_WAITING) report(this.#taskId, { outcome: UNSTARTED });
    const follower = this.follower;
    this.follower = undefined;
    if (follower !== undefined) follower.#unstarted();
  }
}

/** The one piscina task, the warm-up: proves the handlers load (their setup may still be retrying; readiness waits for it). */
export default async function runTask(task: ThreadTask): Promise<void> {
  if (task.warmUp) await loaded;
}
