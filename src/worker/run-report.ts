import type { DeadLetterRecord } from '../dead-letter/sink.js';
import type { DispatchError, DispatchJob } from '../dispatch/types.js';
import { traceLogFields } from '../tracing/trace-context.js';
import type { RunOutcome } from '../observability/worker-events.js';
import type { CloudEvent } from '../types.js';
import type { LeaseView } from './lease-view.js';

// How one handler run ended, told to the worker's listeners and to the log.

/** Tells the worker's listeners (`run:done`: metrics, logs, the console) how one handler run ended. */
export function emitRunEnd(
  lease: LeaseView,
  event: CloudEvent,
  handler: string,
  outcome: RunOutcome,
  durationMs: number,
  attempt: number,
  error?: DispatchError,
): void {
  // Two literals rather than a spread: this runs once per handler run.
  if (error === undefined) lease.context.events.emit('run:done', { workerId: lease.workerId, event, handler, outcome, durationMs, attempt });
  else {
    const reported = error.code === undefined ? { message: error.message } : { message: error.message, code: error.code };
    lease.context.events.emit('run:done', { workerId: lease.workerId, event, handler, outcome, durationMs, error: reported, attempt });
  }
}

/** The warning of a failed run that will run again (after `retryInMs`). */
export function logFailedRun(lease: LeaseView, job: DispatchJob, attempt: number, retryInMs: number, error: DispatchError): void {
  const maxAttempts = lease.context.maxAttempts;
  lease.log.warn(
    { eventId: job.event.id, handler: job.handler, attempt, maxAttempts, retryInMs, err: error, ...traceLogFields(job.trace) },
    `handler ${job.handler} failed (attempt ${attempt} of ${maxAttempts}): ${error.message}`,
  );
}

/** The error line of a run given up: its event written to the dead-letter sink for its handler. */
export function logDeadLettered(lease: LeaseView, job: DispatchJob, reason: DeadLetterRecord['reason'], attempt: number, error: DispatchError): void {
  const event = job.event;
  lease.log.error(
    { eventId: event.id, type: event.type, handler: job.handler, attempt, reason, err: error, ...traceLogFields(job.trace) },
    `event ${event.id} dead-lettered for ${job.handler} (${reason}, attempt ${attempt}): ${error.message}`,
  );
}
