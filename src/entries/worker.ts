/**
 * `durable-worker/worker`: the worker, programmatically (docs/api.md). Start it with the `run`
 * options in camelCase, listen to its events, bring your own client, dead-letter sink or clock;
 * open a dead-letter sink to list, replay and purge what it left.
 */
export { startWorker, openDeadLetters } from '../lazy-entry-points.js';
export type { RunningWorker, StartWorkerOptions, WorkerEnd } from '../worker/running-worker.js';
export type { RunOptionsInput as WorkerOptions } from '../config/options.js';
export type { PullTimings } from '../worker/pull-options.js';
export type {
  AckStatusLabel,
  BreakerChange,
  EventOutcome,
  LeasePulled,
  PullCrashed,
  PullStatusLabel,
  RunDone,
  RunOutcome,
  WorkerEmitter,
  WorkerEventMap,
} from '../observability/worker-events.js';
export type { ConsumerApi, PullResult } from '../client/consumer-api.js';
export type { Clock } from '../runtime/clock.js';
export type { DeadLetterSink, DeadLetterRecord, DeadLetterReason, DeadLetterState, StoredDeadLetter } from '../dead-letter/sink.js';
export type { DeadLetterStore, DeadLetterCount } from '../dead-letter/store.js';
export type {
  DeadLetters,
  DeadLetterListOptions,
  DeadLetterPage,
  DeadLetterSelection,
  OpenDeadLettersOptions,
  PurgeSelectionOptions,
  ReplayOptions,
  ReplayReport,
} from '../dead-letter-admin/api.js';
export type { DeadLetterFilter } from '../dead-letter/query.js';
export type { ReplayOutcome, ReplayResult } from '../dead-letter-admin/replay.js';
