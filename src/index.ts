/**
 * `durable-worker`: what a handler module imports (docs/api.md): defining handlers, their context and
 * event types, and the errors. The worker, the client and the emulator have rooms of their own.
 */
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
// What a handler reads of its event.
export type { CloudEvent, PropertyDataType, PropertyItem, PropertyValue, SourceEntry, SourceEntryUpdatedData, SourceEntryUpdatedEvent } from './types.js';

// The rooms (docs/api.md): the worker, the client and the emulator have entries of their own,
// `durable-worker/worker`, `durable-worker/client` and `durable-worker/emulator`; docs show those.
// The package entry keeps every name it had, as aliases, so that existing imports go on working.
// The worker's and the emulator's functions load their modules at their first call: handler modules
// import this entry in every worker thread (src/lazy-entry-points.ts).
export * from './entries/worker.js';
export * from './entries/client.js';
export * from './entries/emulator.js';
// The idempotency store's interface, as before; its room is durable-worker/testing, with its contract.
export type { ClaimResult, ClaimState, FailureEntry, FailureHistory, IdempotencyStore } from './idempotency/store.js';
