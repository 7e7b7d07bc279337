/** The public face of durable-worker: what users import, by name. */
export { defineHandler, EventDataError } from './handlers/define.js';
export type { Handler, HandlerContext, HandlerDefinition, HandlerLogger, EventFor, EventTypeMap, DataSchema, HandlerEvent } from './handlers/define.js';
// Batch handlers and the life cycle (setup/teardown, ctx.resources) of either kind (docs/handlers.md).
export { defineBatchHandler } from './handlers/define-batch.js';
export type { BatchHandler, BatchHandlerDefinition, BatchContext } from './handlers/define-batch.js';
export type { BatchEventResult, BatchResults } from './handlers/batch-results.js';
export type { HandlerLifeCycle, LifeCycleContext, TeardownContext } from './handlers/define.js';
// Transactional handlers: `ctx.tx`, a pg client in the worker's transaction (docs/handlers.md).
export type { TransactionalContext } from './handlers/define.js';
export type { TransactionClient, TransactionField, TransactionQueryConfig, TransactionQueryResult, TransactionRow } from './handlers/transaction-client.js';
export { PermanentError, RetryLaterError, DurableWorkerError, ConfigError, ErrorCodes, hasCode } from './errors.js';
// The errors the worker and its tools raise, one class per code (docs/errors.md).
export { AbortedError, DeadLetterError, HandlerLoadError, HandlerTimeoutError, StoreError, TransactionError } from './errors.js';
export type { ErrorCode } from './errors.js';
export type { BreakerChange } from './observability/worker-events.js';
export type {
  AckRequest,
  AckResponse,
  AckStatus,
  CloudEvent,
  LeaseBatch,
  ProblemDetails,
  PullParams,
  PropertyDataType,
  PropertyItem,
  PropertyValue,
  SourceEntry,
  SourceEntryUpdatedData,
  SourceEntryUpdatedEvent,
  TypedIngestRequest,
  TypedIngestResponse,
} from './types.js';

// The worker, programmatically: the `run` options in camelCase, validated like the CLI's. It (like
// startEmulator) loads its modules at the first call: handler modules import this entry in every
// worker thread (src/lazy-entry-points.ts).
export { startWorker } from './lazy-entry-points.js';
export type { RunningWorker, StartWorkerOptions, WorkerEnd } from './worker/running-worker.js';
export type { RunOptionsInput as WorkerOptions } from './config/options.js';
// What StartWorkerOptions takes and what RunningWorker.events carries, for a caller that brings its
// own client, store, sink or clock, or listens to the worker.
export type { PullTimings } from './worker/pull-options.js';
export type { AckStatusLabel, EventOutcome, PullStatusLabel, WorkerEmitter, WorkerEventMap } from './observability/worker-events.js';
export type { ConsumerApi, PullResult } from './client/consumer-api.js';
export type { ClaimResult, ClaimState, FailureEntry, FailureHistory, IdempotencyStore } from './idempotency/store.js';
export type { DeadLetterSink } from './dead-letter/sink.js';
export type { DeadLetterStore } from './dead-letter/store.js';
export type { Clock } from './runtime/clock.js';

// Dead letters: list, inspect, replay and purge the records of a sink (what `durable-worker dead-letters` uses).
export { openDeadLetters } from './lazy-entry-points.js';
export type {
  DeadLetters,
  DeadLetterListOptions,
  DeadLetterPage,
  DeadLetterSelection,
  OpenDeadLettersOptions,
  PurgeSelectionOptions,
  ReplayOptions,
  ReplayReport,
} from './dead-letter-admin/api.js';
export type { DeadLetterFilter } from './dead-letter/query.js';
export type { ReplayOutcome, ReplayResult } from './dead-letter-admin/replay.js';
export type { DeadLetterRecord, DeadLetterReason, DeadLetterState, StoredDeadLetter } from './dead-letter/sink.js';
export type { DeadLetterCount } from './dead-letter/store.js';

// The platform emulator, for offline development and tests.
export { startEmulator } from './lazy-entry-points.js';
export type { EmulatorOptions, RunningEmulator, EmulatorConfig, FaultOptions } from './emulator/index.js';

// The typed platform client.
export { createClient, ApiError, AuthError, IngestValidationError, NetworkError, isRetryable } from './client/index.js';
export type { ClientOptions, PlatformClient, CallOptions, IngestOptions, RetryPolicy } from './client/index.js';
export type { AccessCatalogItem, LegacyImportAccepted, LegacyImportRequest, LegacyImportVerified, ManagedTag, ManagedTagFilters, ManagedTagListOptions, ManagedTagPage } from './client/index.js';
// Destinations have their own small client (other origins, other credentials): see docs/client.md.
export { createDestinationClient, formatDestinationDateTime } from './client/index.js';
export type {
  DestinationClient,
  DestinationClientOptions,
  DestinationFacet,
  DestinationGetQuery,
  DestinationPostQuery,
  DestinationQueryResponse,
  DestinationResult,
  FilterCriteria,
  FilterOperator,
  FilterQuery,
  FilterValue,
} from './client/index.js';
