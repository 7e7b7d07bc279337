import type { DispatchError } from '../dispatch/types.js';
import type { RunOutcome } from '../observability/worker-events.js';
import type { CloudEvent } from '../types.js';
import type { LeaseView } from './lease-view.js';

/** Tells the worker's listeners (`run:done`: metrics, logs, the console) how one handler run ended. */
export function emitRunEnd(lease: LeaseView, event: CloudEvent, handler: string, outcome: RunOutcome, durationMs: number, attempt: number, error?: DispatchError): void {
  // Two literals rather than a spread: this runs once per handler run.
  if (error === undefined) lease.context.events.emit('run:done', { workerId: lease.workerId, event, handler, outcome, durationMs, attempt });
  else {
    const reported = error.code === undefined ? { message: error.message } : { message: error.message, code: error.code };
    lease.context.events.emit('run:done', { workerId: lease.workerId, event, handler, outcome, durationMs, error: reported, attempt });
  }
}
