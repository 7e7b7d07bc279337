import type { DispatchJob } from './types.js';

/** `workerData` of every thread of the pool. */
export interface ThreadWorkerData {
  handlersDir: string | undefined;
  forward: { url: string; mode: 'binary' | 'structured' } | undefined;
  logLevel: string;
  /** BroadcastChannel name shared by the pool and its threads (unique per pool). */
  channelName: string;
  defaultTimeoutMs: number | undefined;
}

/** The payload of one piscina task. */
export type ThreadTask = { taskId: number; job: DispatchJob } | { taskId: number; warmUp: true };

/**
 * Messages on the pool's BroadcastChannel: the main thread aborts a task or pings; threads answer
 * pings (a thread that cannot answer has a blocked event loop).
 */
export type ChannelMessage = { type: 'abort'; taskId: number } | { type: 'ping'; nonce: number } | { type: 'pong'; nonce: number; threadId: number };
