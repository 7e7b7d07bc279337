import type { AckResponse, AckStatus, CloudEvent } from '../types.js';

/**
 * What the loop tells the world. Metrics and logging subscribe; they never drive the loop
 * (sqs-consumer's typed events, BullMQ's listener map).
 */
export type EventOutcome = 'ok' | 'failed' | 'duplicate' | 'dead_lettered';

/** Pull status label of `durable_worker_pulls_total`. */
export type PullStatusLabel = '200' | '204' | '409' | '429' | '4xx' | '5xx' | 'error';
/** Ack status label of `durable_worker_acks_total`. */
export type AckStatusLabel = 'committed' | 'requeued' | 'stale' | 'error';

export interface WorkerEventMap {
  /** A pull finished (any status). */
  'pull:done': [{ workerId: string; status: PullStatusLabel; eventCount: number; durationMs: number }];
  /** A batch was leased. */
  'batch:pulled': [{ workerId: string; leaseId: string; generation: number; attempt: number; events: readonly CloudEvent[] }];
  /** An event (for one handler, or skipped) reached its outcome. */
  'event:done': [{ workerId: string; event: CloudEvent; handler: string | undefined; outcome: EventOutcome; durationMs: number; error?: { message: string; code?: string } }];
  /** Events in progress across all workers changed. */
  'inflight:changed': [{ inFlight: number }];
  /** An acknowledgement finished. */
  'ack:done': [{ workerId: string; leaseId: string; generation: number; sent: AckStatus; status: AckStatusLabel; response?: AckResponse; lastSequence?: string }];
  /** A pull answered 204: the worker is caught up. */
  'caught-up': [{ workerId: string; at: number }];
  /** A batch used more than the warning fraction of its lease. */
  'lease:near-deadline': [{ workerId: string; leaseId: string; usedFraction: number }];
  /** A loop crashed and will be restarted. */
  'loop:crashed': [{ workerId: string; error: unknown; restartInMs: number }];
  /** Readiness changed (token, handlers, destination reachable). */
  'ready:changed': [{ ready: boolean; reason?: string }];
  /** A listener of `event` threw or rejected; the worker ignored it and went on (event-bus.ts). */
  'listener:error': [{ event: string; error: unknown }];
}

/** The worker's event bus. */
export type WorkerEmitter = import('node:events').EventEmitter<WorkerEventMap>;
