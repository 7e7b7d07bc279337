import type { MessagePort } from 'node:worker_threads';
import type { DispatchJob, DispatchResult } from './types.js';

/** `workerData` of every thread of the pool. */
export interface ThreadWorkerData {
  handlersDir: string | undefined;
  forward: { url: string; mode: 'binary' | 'structured' } | undefined;
  logLevel: string;
  /** BroadcastChannel name shared by the pool and its threads (unique per pool). */
  channelName: string;
  defaultTimeoutMs: number | undefined;
  /** `--otel`: the thread starts its own OpenTelemetry SDK. */
  otel: boolean;
}

/**
 * One handler run sent to a thread; `taskId` names it in aborts and outcomes. With `after`, the
 * thread starts it only when the run `after` (sent to the same thread before it) ends ok
 * (LeaseDispatch.startAfter), and reports it `unstarted` when that run ends otherwise.
 */
export interface ThreadJob {
  taskId: number;
  job: DispatchJob;
  after?: number | undefined;
}

/**
 * Values of a run's state in shared memory (RunsMessage.states): what the thread recorded of a run,
 * readable by the main thread when the run's outcome never arrives (its thread died, or a run
 * blocks it for good).
 */
export const RUN_WAITING = 0;
export const RUN_RUNNING = 1;
export const RUN_OK = 2;
export const RUN_FAILED = 3;
export const RUN_PERMANENT = 4;
/** Set by the main thread instead of RUN_RUNNING: it gave up on a run that had not started, which now never will. */
export const RUN_WITHDRAWN = 5;

/**
 * What a thread reports for one job. `missed`: a job with `after` came when that run had already
 * ended (their messages crossed); the main thread, which has that run's outcome by then (outcomes
 * are posted in order), decides.
 */
export interface ThreadJobOutcome {
  taskId: number;
  outcome: DispatchResult;
  missed?: true;
}

/**
 * Main thread -> thread, on the thread's link (thread-link.ts): the runs started in one turn of the
 * main thread's event loop. The thread starts them all at once and reports their outcomes on the
 * link as they finish, a turn's worth per message (an array of ThreadJobOutcome). `states[i]`, in
 * shared memory, is RUN_RUNNING once job i's handler is about to be called (set by compare-and-swap
 * from RUN_WAITING: a job the main thread withdrew never starts), then how it ended, set before the
 * outcome is posted.
 */
export interface RunsMessage {
  jobs: ThreadJob[];
  states: Uint8Array;
}

/**
 * Thread -> pool, on piscina's `message` event (the thread's parentPort), once when the thread
 * starts: its end of the link the runs travel on.
 */
export interface LinkMessage {
  type: 'durable-worker:link';
  threadId: number;
  port: MessagePort;
}

export function isLinkMessage(message: unknown): message is LinkMessage {
  return typeof message === 'object' && message !== null && (message as { type?: unknown }).type === 'durable-worker:link';
}

/** The one piscina task: proves a thread loads the handler set (runs travel on the links instead). */
export type ThreadTask = { warmUp: true };

/**
 * Messages on the pool's BroadcastChannel: the main thread aborts runs (all the running runs of a
 * lease in one message) or pings; threads answer pings (a thread that cannot answer has a blocked
 * event loop).
 */
export type ChannelMessage =
  | { type: 'abort'; taskIds: number[]; /** The abort reason's code (deadline or shutdown). */ code?: string | undefined }
  | { type: 'ping'; nonce: number }
  | { type: 'pong'; nonce: number; threadId: number }
  // The handlers' life cycle (thread-life-cycle.ts): each thread sets up when it starts, tears down when told.
  | { type: 'setup-failed'; threadId: number; handler: string; message: string; attempt: number; retryInMs: number | undefined }
  | { type: 'setup-done'; threadId: number }
  | { type: 'teardown'; timeoutMs: number }
  | { type: 'torn-down'; threadId: number; failures: { handler: string; message: string }[] }
  /** `--otel`: export the spans buffered (before the pool ends the threads), then answer. */
  | { type: 'flush'; nonce: number }
  | { type: 'flushed'; nonce: number; threadId: number };
