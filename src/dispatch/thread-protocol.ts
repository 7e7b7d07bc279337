import type { MessagePort } from 'node:worker_threads';
import type { TraceCarrier } from '../tracing/trace-context.js';
import type { CloudEvent } from '../types.js';
import type { DispatchResult, JobContext } from './types.js';

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
 * Main thread -> thread, on the thread's link (thread-link.ts): the runs started in one turn of the
 * main thread's event loop, column by column. Run i has the task id `firstTaskId + i`, which names
 * it in aborts and outcomes. The thread starts them all at once and reports their outcomes on the
 * link as they finish, a turn's worth per message (an OutcomesMessage).
 *
 * Columns rather than an object per run: the structured clone spends more on each object it copies
 * (its keys, its shape rebuilt in the thread) than on plain values, and an object per run plus one
 * for its job cost more than the event they carried (docs/benchmarks.md, "Runs and outcomes in
 * columns").
 */
export interface RunsMessage {
  firstTaskId: number;
  /** Run i's handler name. */
  handlers: string[];
  /** Run i's event (a batch handler's call: the first of its events). */
  events: CloudEvent[];
  /** Run i's ctx. The runs of one lease share one object, which the clone copies once. */
  contexts: JobContext[];
  /** A batch handler's call at i: all its events. Absent when no run of the message is one. */
  batches?: (CloudEvent[] | undefined)[];
  /** Tracing on: run i's process span. Absent when no run of the message has one. */
  traces?: (TraceCarrier | undefined)[];
  /**
   * The task id of the run that run i follows (LeaseDispatch.startAfter), or NO_LEADER. The thread
   * starts run i only when that run (sent to the same thread before it) ends ok, and reports it
   * `unstarted` when that run ends otherwise. Absent when no run of the message follows one.
   */
  after?: number[];
  /**
   * In shared memory: `states[i]` is RUN_RUNNING once run i's handler is about to be called (set by
   * compare-and-swap from RUN_WAITING: a run the main thread withdrew never starts), then how it
   * ended, set before its outcome is posted.
   */
  states: Uint8Array;
}

/** RunsMessage.after of a run that follows none (task ids start at 1). */
export const NO_LEADER = -1;

/**
 * What a thread reports of a run that did not simply end ok: failed, permanent, unstarted, or ok
 * with per-event results (a batch call). `missed`: a run with a leader came when that run had
 * already ended (their messages crossed); the main thread, which has that run's outcome by then
 * (outcomes are posted in the order the runs ended), decides.
 */
export interface ThreadOutcome {
  outcome: DispatchResult;
  missed?: true;
}

/**
 * Thread -> main thread, on the link: the runs that ended in one turn of the thread's event loop,
 * in the order they ended. Most ended ok, and for those a task id and a duration say it all: they
 * travel as two numbers (RunsMessage says why).
 */
export interface OutcomesMessage {
  /** The runs reported, in the order they ended. */
  taskIds: number[];
  /**
   * For each: how long its handler ran (ms) when it ended ok with nothing more to say; else
   * NOT_OK_DURATION, and its outcome is the next one in `others`.
   */
  okDurationsMs: number[];
  others: ThreadOutcome[];
}

/** OutcomesMessage.okDurationsMs of a run whose outcome is in `others` (a run that ended ran 0 ms or more). */
export const NOT_OK_DURATION = -1;

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
