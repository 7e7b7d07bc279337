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
}

/** One handler run inside a chunk; `taskId` names it in aborts and outcomes. */
export interface ThreadJob {
  taskId: number;
  job: DispatchJob;
  /** In a lane's chunk: the event the run belongs to (the runs of one event start together). */
  unit?: number;
  /** Send a ThreadJobStart when it starts (the main thread could not tell when it would). */
  noticeStart?: true;
}

/**
 * Values of ThreadLane.states: what the thread recorded of a run, readable by the main thread when
 * the run's outcome never arrives (its thread died, or a later run blocks it for good).
 */
export const RUN_WAITING = 0;
export const RUN_RUNNING = 1;
export const RUN_OK = 2;
export const RUN_FAILED = 3;
export const RUN_PERMANENT = 4;

/** A chunk's lane (see BatchLane): the thread runs at most `limit` of its events at once. */
export interface ThreadLane {
  id: number;
  limit: number;
  /**
   * Per job of the chunk, in shared memory: RUN_RUNNING set just before the thread calls the handler,
   * then how it ended, set before the outcome is posted. After a thread died or stopped answering,
   * the main thread tells runs never started (unstarted) and runs that ended from those it cut.
   */
  states: Uint8Array;
}

/** What a thread reports for one job. */
export interface ThreadJobOutcome {
  taskId: number;
  outcome: DispatchResult;
}

/**
 * Sent on a chunk's port the moment a run asked for it (`noticeStart`) starts: a run of a handler
 * with a timeout of its own that the main thread expected to wait in its lane. The main thread then
 * watches it from its true start (a run that blocks its thread is found at its timeout, not at the
 * batch deadline). Other runs need no notice.
 */
export interface ThreadJobStart {
  startedTaskId: number;
  atMs: number;
}

/**
 * The payload of one piscina task: a chunk of the jobs dispatched in the same turn of the main
 * thread's event loop (one message instead of one per event). The thread reports outcomes on `port`
 * as they finish, a turn's worth per message (an array), and resolves the task with every outcome of
 * the chunk; a {@link ThreadJobStart} may come between.
 */
export type ThreadTask = { chunkId: number; jobs: ThreadJob[]; port: MessagePort; lane?: ThreadLane } | { chunkId: number; warmUp: true };

/**
 * Messages on the pool's BroadcastChannel: the main thread aborts a task or pings; threads answer
 * pings (a thread that cannot answer has a blocked event loop).
 */
export type ChannelMessage =
  | { type: 'abort'; taskId: number; /** The abort reason's code (deadline or shutdown). */ code?: string | undefined }
  /** Drain: a lane's runs not started yet end `unstarted`, now and when they arrive later. */
  | { type: 'stop-lane'; laneId: number }
  | { type: 'ping'; nonce: number }
  | { type: 'pong'; nonce: number; threadId: number };
