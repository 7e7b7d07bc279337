import type { CloudEvent } from '../types.js';

/** Why an event was given up: `permanent` (PermanentError, schema mismatch) or `max-attempts`. */
export type DeadLetterReason = 'permanent' | 'max-attempts';

/**
 * `dead`: waiting for a replay or a purge; `replayed`: the handler ran ok on it since; `resolved`:
 * its key was applied meanwhile (a later delivery succeeded), so a replay did not run it; `purged`:
 * dropped.
 */
export type DeadLetterState = 'dead' | 'replayed' | 'resolved' | 'purged';

export const DEAD_LETTER_REASONS: readonly DeadLetterReason[] = ['permanent', 'max-attempts'];
export const DEAD_LETTER_STATES: readonly DeadLetterState[] = ['dead', 'replayed', 'resolved', 'purged'];

/** One dead-lettered event for one handler: enough to understand and replay it. */
export interface DeadLetterRecord {
  event: CloudEvent;
  /** Handler name (file path in the handlers folder without extension, or `@forward`). */
  handler: string;
  /** Why: `permanent` (PermanentError) or `max-attempts` (still failing at --max-attempts). */
  reason: DeadLetterReason;
  /** The last run's error. */
  error: { message: string; stack?: string; code?: string; retryAfterMs?: number };
  /** The handler's attempt on the event that dead-lettered it: its runs on it, every one failed. */
  attempt: number;
  /** The delivery attempt of the lease that carried it then (the platform's count). */
  deliveryAttempt?: number;
  generation: number;
  workerId: string;
  leaseId: string;
  /** ISO time of the handler's first failure on the event (kept with its count in the idempotency store). */
  firstFailedAt?: string;
  /** ISO time of its last failure. */
  lastFailedAt?: string;
  /** ISO time the record was written. */
  deadLetteredAt: string;
  /**
   * The worker marks the key dead-lettered (`deadLetteredKey`) beside its done mark, in the same
   * write: a replay can then tell a key that ended dead-lettered from one a later delivery applied.
   * Absent on records of older workers (a replay then runs them as before).
   */
  deadLetterMark?: true;
}

/**
 * A record as a sink keeps it: the worker's record plus its identity and state. Written twice (a
 * process killed between the write and the ack writes it again on redelivery), it stays one record.
 */
export interface StoredDeadLetter extends DeadLetterRecord {
  /** `<handler>:<event id>`, the handler's idempotency key: unique within a prefix. */
  id: string;
  /** The `--idempotency-prefix` of the worker that wrote it (default `<tenant>:<destination>`). */
  prefix: string;
  state: DeadLetterState;
  /** Replays tried on this record, failed ones included. */
  replayAttempts: number;
  /** ISO time of the replay that succeeded. */
  replayedAt?: string;
  /** ISO time a replay found the key applied meanwhile (state `resolved`). */
  resolvedAt?: string;
  /** ISO time of the purge. */
  purgedAt?: string;
  /** ISO time of the last change after the write (a replay or a purge); absent until then. */
  updatedAt?: string;
}

/** Where dead-lettered events go. One interface, adapters chosen by URL (`file:`, `sqlite:`, `redis://`, `postgres://`). */
export interface DeadLetterSink {
  /**
   * Resolves once the record is durable enough to mark the event done and ack; a rejection keeps
   * the event retried. Keyed by `<handler>:<event id>`: a record still `dead` is kept as it is; one
   * already replayed or purged starts over as `dead` (the event failed again).
   */
  write(record: DeadLetterRecord): Promise<void>;
  /** Idempotent. */
  close(): Promise<void>;
}
