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
import pino from 'pino';
import { loadHandlerSet } from '../handlers/handler-set.js';
import type { LoadedHandler } from '../handlers/loader.js';
import { createLogger } from '../observability/logger.js';
import { runHandler } from './run-handler.js';
import type { ChannelMessage, ThreadJob, ThreadJobOutcome, ThreadTask, ThreadWorkerData } from './thread-protocol.js';
import type { DispatchOutcome } from './types.js';

const data = workerData as ThreadWorkerData;

const logger = createLogger({ level: data.logLevel, pretty: false, base: { thread: threadId }, destination: pino.destination({ fd: 1, sync: true }) });
const childLogger = (bindings: Record<string, unknown>) => logger.child(bindings);

/** Task id -> the abort of its run, while it runs. */
const aborts = new Map<number, (reason: unknown) => void>();
const channel = new BroadcastChannel(data.channelName);
channel.onmessage = (message: unknown) => {
  const payload = (message as { data: ChannelMessage }).data;
  if (payload.type === 'abort') aborts.get(payload.taskId)?.({ code: payload.code });
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
    return () => aborts.delete(taskId);
  };
  return runHandler(handler, job, { abortOn, logger: childLogger, defaultTimeoutMs: data.defaultTimeoutMs });
}

/**
 * Runs a chunk's jobs concurrently. Outcomes go back on the chunk's port as they finish, batched per
 * turn of this thread's event loop (fast handlers finish together: one message for all of them);
 * those of the last turn travel with the task's result instead, so a chunk of fast jobs costs no
 * port message at all. Each outcome is sent exactly once.
 */
export default async function runTask(task: ThreadTask): Promise<ThreadJobOutcome[]> {
  const handlers = await handlersPromise;
  if (!('jobs' in task)) return [];
  const { port } = task;
  let unsent: ThreadJobOutcome[] = [];
  let flush: NodeJS.Immediate | undefined;
  const report = (done: ThreadJobOutcome) => {
    unsent.push(done);
    flush ??= setImmediate(() => {
      flush = undefined;
      port.postMessage(unsent);
      unsent = [];
    });
  };
  try {
    await Promise.all(task.jobs.map(async (threadJob) => report({ taskId: threadJob.taskId, outcome: await runJob(handlers, threadJob) })));
    return unsent;
  } finally {
    if (flush !== undefined) clearImmediate(flush);
    port.close();
  }
}
