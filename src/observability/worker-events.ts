import type { AckResponse, AckStatus, CloudEvent } from '../types.js';

/** `closed`: runs start; `open`: none start until the cool-down ends; `half-open`: one probe run at a time. */
export type BreakerState = 'closed' | 'open' | 'half-open';

/** A handler's breaker changed state (`breaker:state`). */
export interface BreakerChange {
  handler: string;
  state: BreakerState;
  /** Share of the window's runs that failed when it changed. */
  failureRatio: number;
}

/** How a run ended, as the worker tells its listeners (`run:done`). */
export type RunOutcome = 'ok' | 'failed' | 'duplicate' | 'dead_lettered';
/** @deprecated The old name of {@link RunOutcome}: it names how a run ended, not an event. */
export type EventOutcome = RunOutcome;

/** Pull status label of `durable_worker_pulls_total`. */
export type PullStatusLabel = '200' | '204' | '409' | '429' | '4xx' | '5xx' | 'error';
/** Ack status label of `durable_worker_acks_total`. */
export type AckStatusLabel = 'committed' | 'requeued' | 'stale' | 'error';

/**
 * What the worker tells the world. Metrics and logging subscribe; they never drive the worker
 * (sqs-consumer's typed events, BullMQ's listener map). Deprecated names are still emitted, after
 * their new name, with the payload they always had (`DEPRECATED_EVENTS`).
 */
export interface WorkerEventMap {
  /** A pull finished (any status). */
  'pull:done': [{ workerId: string; status: PullStatusLabel; eventCount: number; durationMs: number }];
  /** A pull answered 200: a lease, its events, and how often the platform handed them out (`deliveryAttempt`). */
  'lease:pulled': [LeasePulled];
  /** @deprecated Use `lease:pulled`, whose `deliveryAttempt` is this event's `attempt`. */
  'batch:pulled': [Omit<LeasePulled, 'deliveryAttempt'> & { attempt: number }];
  /** A run ended: one handler on one event (`handler` undefined: no handler routes the event, which is acked as done). */
  'run:done': [RunDone];
  /** @deprecated Use `run:done`: it has the same payload; what ends is a run, not an event. */
  'event:done': [RunDone];
  /** A handler's run on an event was deferred to the store until `retryAtMs` (its retry time, its breaker, or an earlier run of its chain). */
  'run:deferred': [{ workerId: string; event: CloudEvent; handler: string; reason: 'retry' | 'breaker' | 'chain' | 'limit'; retryAtMs: number }];
  /** Events in flight across the process changed (at most once per turn of the event loop). */
  'inflight:changed': [{ inFlight: number }];
  /** Leases held (pulled, ack not yet answered) or events queued (leased, not started) changed (at most once per turn). */
  'leases:changed': [{ held: number; queued: number; /** @deprecated The old name of `queued`, same value. */ buffered: number }];
  /** An acknowledgement finished (`durationMs`: from the first send to the answer or the giving up, retries included). */
  'ack:done': [
    {
      workerId: string;
      leaseId: string;
      generation: number;
      sent: AckStatus;
      status: AckStatusLabel;
      response?: AckResponse;
      lastSequence?: string;
      durationMs?: number;
    },
  ];
  /** A pull answered 204 while the process held no lease: caught up, and every ack sent was answered. */
  'caught-up': [{ workerId: string; at: number }];
  /** A lease used more than the warning fraction of its visibility, or was cut at its deadline. */
  'lease:near-deadline': [{ workerId: string; leaseId: string; usedFraction: number }];
  /** Handling a pull's answer crashed (a bug): its workerId rests, then pulls again. */
  'pull:crashed': [PullCrashed];
  /** @deprecated Use `pull:crashed`: it has the same payload. */
  'loop:crashed': [PullCrashed];
  /** A handler's circuit breaker changed state (closed, open, half-open). */
  'breaker:state': [BreakerChange];
  /** Readiness changed (token, handlers, destination reachable). */
  'ready:changed': [{ ready: boolean; reason?: string }];
  /** A listener of `event` threw or rejected; the worker ignored it and went on (event-bus.ts). */
  'listener:error': [{ event: string; error: unknown }];
}

/** `lease:pulled`'s payload. */
export interface LeasePulled {
  workerId: string;
  leaseId: string;
  generation: number;
  /** The lease's `attempt`: how often the platform handed out its events (the glossary's delivery attempt). */
  deliveryAttempt: number;
  events: readonly CloudEvent[];
}

/** `run:done`'s payload. */
export interface RunDone {
  workerId: string;
  event: CloudEvent;
  handler: string | undefined;
  outcome: RunOutcome;
  durationMs: number;
  error?: { message: string; code?: string };
  /** The handler's attempt on the event (absent without a handler). */
  attempt?: number;
}

/** `pull:crashed`'s payload. */
export interface PullCrashed {
  workerId: string;
  error: unknown;
  restartInMs: number;
}

/**
 * Old event names the bus still emits, each right after its new name, until the next major version
 * (docs/api.md "Deprecated names"): the old name, and its payload made from the new one's.
 */
export const DEPRECATED_EVENTS: {
  readonly [K in 'lease:pulled' | 'run:done' | 'pull:crashed']: { name: keyof WorkerEventMap; payload: (payload: WorkerEventMap[K][0]) => unknown };
} = {
  'lease:pulled': { name: 'batch:pulled', payload: ({ deliveryAttempt, ...rest }) => ({ ...rest, attempt: deliveryAttempt }) },
  'run:done': { name: 'event:done', payload: (payload) => payload },
  'pull:crashed': { name: 'loop:crashed', payload: (payload) => payload },
};

/** The worker's event bus. */
export type WorkerEmitter = import('node:events').EventEmitter<WorkerEventMap>;

/** Listeners of some of the worker's events, by event name. */
export type WorkerListeners = { [K in keyof WorkerEventMap]?: (...args: WorkerEventMap[K]) => void };

/** Adds each of `listeners` to the bus; returns the function that removes them all. */
export function listenTo(events: WorkerEmitter, listeners: WorkerListeners): () => void {
  const bus = events as unknown as import('node:events').EventEmitter;
  const entries = Object.entries(listeners) as [string, (...args: unknown[]) => void][];
  for (const [name, listener] of entries) bus.on(name, listener);
  return () => {
    for (const [name, listener] of entries) bus.off(name, listener);
  };
}
