import type { DeadLetterRecord } from '../dead-letter/sink.js';
import type { DispatchError, DispatchJob } from '../dispatch/types.js';
import type { FailureHistory } from '../idempotency/store.js';
import type { LeaseView } from './lease-view.js';

/** The record a run leaves in the dead-letter sink: the event, why, and its failures' history. */
export function deadLetterRecord(
  lease: LeaseView,
  job: DispatchJob,
  reason: DeadLetterRecord['reason'],
  error: DispatchError,
  attempt: number,
  history: FailureHistory | undefined,
): DeadLetterRecord {
  const now = new Date(lease.context.clock.now()).toISOString();
  return {
    event: job.event,
    handler: job.handler,
    reason,
    error,
    attempt,
    deliveryAttempt: lease.pulled.attempt,
    generation: lease.pulled.generation,
    workerId: lease.workerId,
    leaseId: lease.pulled.leaseId,
    firstFailedAt: history === undefined ? now : new Date(history.firstFailedAtMs).toISOString(),
    lastFailedAt: now,
    deadLetteredAt: now,
    deadLetterMark: true,
  };
}
