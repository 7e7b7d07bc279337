import type { CloudEvent } from '../types.js';

/** One dead-lettered event for one handler: enough to understand and replay it. */
export interface DeadLetterRecord {
  event: CloudEvent;
  /** Handler name (file path in the handlers folder without extension, or `@forward`). */
  handler: string;
  /** Why: `permanent` (PermanentError) or `max-attempts` (still failing at --max-attempts). */
  reason: 'permanent' | 'max-attempts';
  error: { message: string; stack?: string; code?: string };
  attempt: number;
  generation: number;
  workerId: string;
  leaseId: string;
  /** ISO time of the first failure seen by this process, when known. */
  firstFailedAt?: string;
  /** ISO time the record was written. */
  deadLetteredAt: string;
}

/** Where dead-lettered events go. One interface, adapters chosen by URL (`file:PATH`). */
export interface DeadLetterSink {
  /** Resolves once the record is durable enough to mark the event done and ack. */
  write(record: DeadLetterRecord): Promise<void>;
  /** Idempotent. */
  close(): Promise<void>;
}
