import type { CloudEvent } from '../types.js';

/** What the batch knows about the delivery of one event; becomes the handler's ctx. */
export interface JobContext {
  attempt: number;
  generation: number;
  workerId: string;
  leaseId: string;
  /** Epoch ms of the batch deadline (lease expiry minus the safety margin). */
  deadlineMs: number;
}

/** One handler run for one event. Plain data: it crosses into a worker thread by structured clone. */
export interface DispatchJob {
  /** Handler name (its path in the handlers folder without extension, or `@forward`). */
  handler: string;
  event: CloudEvent;
  ctx: JobContext;
}

/** A handler failure in plain data (structured clone drops prototypes: branch on `code`). */
export interface DispatchError {
  message: string;
  stack?: string;
  code?: string;
}

export type DispatchOutcome = { status: 'ok' } | { status: 'failed' | 'permanent'; error: DispatchError };

/**
 * Runs handlers: in-process (`--isolation none`) or in piscina worker threads (`--isolation thread`).
 * `dispatch` never rejects: every failure, timeout, abort or crash becomes an outcome.
 */
export interface Dispatcher {
  dispatch(job: DispatchJob, signal: AbortSignal): Promise<DispatchOutcome>;
  /** Idempotent. Ends handler runs still going (a thread pool terminates its threads). */
  close(): Promise<void>;
}
