import type { MessagePort } from 'node:worker_threads';
import type { TraceCarrier } from '../tracing/trace-context.js';
import type { CloudEvent } from '../types.js';
import type { EffectTransactionsOptions } from '../idempotency/postgres-transactions.js';
import type { JobContext } from '../types.js';
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
  /** Transactional handlers: the thread opens its own connections to the store's database, on first use. */
  transactions: EffectTransactionsOptions | undefined;
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
 * for its job would cost more than the event they carry.
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
  /** A transactional handler's call at i: its keys (DispatchJob.keys). Absent when no run of the message is one. */
  keys?: (string[] | undefined)[];
  /** Run i's DispatchJob.keyPrefix. Absent when no run of the message has one. */
  keyPrefixes?: (string | undefined)[];
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
 * Writes a RunsMessage run by run (the main thread's side, thread-link.ts); the thread reads each
 * run back with {@link jobAt} and {@link leaderAt}. Every column is filled by push, never from
 * `new Array(count)`: the clone copies an array with holes element by element with its index, and
 * one without as a dense list (V8's ValueSerializer).
 */
export class RunsWriter {
  readonly message: RunsMessage;

  constructor(firstTaskId: number, states: Uint8Array) {
    this.message = { firstTaskId, handlers: [], events: [], contexts: [], states };
  }

  /** The next run: its job, and the task id of the run it follows, if any. */
  add(job: DispatchJob, leaderTaskId: number | undefined): void {
    const message = this.message;
    // Runs written before this one: the length a rare column starting here is filled to.
    const index = message.handlers.length;
    message.handlers.push(job.handler);
    message.events.push(job.event);
    message.contexts.push(job.ctx);
    // The rare columns begin with the first run that needs them.
    if (job.events !== undefined) message.batches ??= filled(index, undefined);
    message.batches?.push(job.events);
    if (job.trace !== undefined) message.traces ??= filled(index, undefined);
    message.traces?.push(job.trace);
    if (job.keys !== undefined) message.keys ??= filled(index, undefined);
    message.keys?.push(job.keys);
    if (job.keyPrefix !== undefined) message.keyPrefixes ??= filled(index, undefined);
    message.keyPrefixes?.push(job.keyPrefix);
    if (leaderTaskId !== undefined) message.after ??= filled(index, NO_LEADER);
    message.after?.push(leaderTaskId ?? NO_LEADER);
  }
}

/** Run i of `message` as the job it was written from. */
export function jobAt(message: RunsMessage, i: number): DispatchJob {
  const job: DispatchJob = { handler: message.handlers[i] as string, event: message.events[i] as CloudEvent, ctx: message.contexts[i] as JobContext };
  const batch = message.batches?.[i];
  if (batch !== undefined) job.events = batch;
  const trace = message.traces?.[i];
  if (trace !== undefined) job.trace = trace;
  const keys = message.keys?.[i];
  if (keys !== undefined) job.keys = keys;
  const keyPrefix = message.keyPrefixes?.[i];
  if (keyPrefix !== undefined) job.keyPrefix = keyPrefix;
  return job;
}

/** The task id of the run that run i of `message` follows, or NO_LEADER. */
export function leaderAt(message: RunsMessage, i: number): number {
  return message.after === undefined ? NO_LEADER : (message.after[i] as number);
}

/** `count` times `value`, pushed (an array without holes). */
function filled<T>(count: number, value: T): T[] {
  const array: T[] = [];
  for (let i = 0; i < count; i++) array.push(value);
  return array;
}

/**
 * What a thread reports of a run that did not simply end ok: failed, permanent, unstarted, or ok
 * with per-event results (a batch call). `missed`: a run with a leader came when that run had
 * already ended (their messages crossed); the main thread, which has that run's outcome by then
 * (outcomes are posted in the order the runs ended), decides.
 */
export interface RunReport {
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
  others: RunReport[];
}

/** OutcomesMessage.okDurationsMs of a run whose outcome is in `others` (a run that ended ran 0 ms or more). */
export const NOT_OK_DURATION = -1;

/**
 * The outcomes a thread has not posted yet, in the order their runs ended (the thread's side,
 * thread-entry.ts); the main thread reads them back with {@link readOutcomes}.
 */
export class OutcomesWriter {
  #taskIds: number[] = [];
  #okDurationsMs: number[] = [];
  #others: RunReport[] = [];

  get empty(): boolean {
    return this.#taskIds.length === 0;
  }

  /** A run that ended ok with nothing more to say: two numbers. */
  ok(taskId: number, durationMs: number): void {
    this.#taskIds.push(taskId);
    this.#okDurationsMs.push(durationMs);
  }

  /** Any other outcome: an object, in its place in the order. */
  other(taskId: number, reported: RunReport): void {
    this.#taskIds.push(taskId);
    this.#okDurationsMs.push(NOT_OK_DURATION);
    this.#others.push(reported);
  }

  /** The message of all written so far; the writer starts empty again. */
  take(): OutcomesMessage {
    const message: OutcomesMessage = { taskIds: this.#taskIds, okDurationsMs: this.#okDurationsMs, others: this.#others };
    this.#taskIds = [];
    this.#okDurationsMs = [];
    this.#others = [];
    return message;
  }
}

/** Calls `report` for each run of `message`, in the order the runs ended; a plain ok comes back as `{ status: 'ok', durationMs }`. */
export function readOutcomes(message: OutcomesMessage, report: (taskId: number, outcome: DispatchResult, missed: boolean) => void): void {
  const { taskIds, okDurationsMs, others } = message;
  let other = 0;
  for (let i = 0; i < taskIds.length; i++) {
    const durationMs = okDurationsMs[i] as number;
    const taskId = taskIds[i] as number;
    if (durationMs !== NOT_OK_DURATION) report(taskId, { status: 'ok', durationMs }, false);
    else {
      const reported = others[other++] as RunReport;
      report(taskId, reported.outcome, reported.missed === true);
    }
  }
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

/** A message a thread posts to the main thread on its parentPort (one of ChannelMessage's). */
export function isChannelMessage(message: unknown): message is ChannelMessage {
  return typeof message === 'object' && message !== null && typeof (message as { type?: unknown }).type === 'string';
}

/** The one piscina task: proves a thread loads the handler set (runs travel on the links instead). */
export type ThreadTask = { warmUp: true };

/**
 * Messages between the main thread and the threads: the main thread aborts runs (all the running runs
 * of a lease in one message), pings, asks for a teardown or a flush, on the pool's BroadcastChannel;
 * threads answer and report on their parentPort (a thread that cannot answer a ping has a blocked
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
