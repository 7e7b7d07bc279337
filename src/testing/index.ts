/**
 * `durable-worker/testing`: a test kit for handlers. Unit tests run a handler on a made-up event
 * with the worker's own dispatch code (`runHandler`), deadlines on a fake clock, a transactional
 * handler's `ctx.tx` on a database the test gives (PGlite needs no server); integration tests
 * run the real worker against an in-process emulator (`withEmulator`).
 */
export { createTestEvent, sourceEntry, entryUpdatedData } from './event.js';
export { runHandler } from './run-handler.js';
export type { HandlerOutcome, RunHandlerOptions, CapturedLog, EventNext } from './run-handler.js';
export { runBatchHandler } from './run-batch-handler.js';
export type { BatchHandlerOutcome } from './run-batch-handler.js';
export type { TestDatabase } from './test-transaction.js';
export { createFakeClock } from './clock.js';
export type { FakeClock, Clock } from './clock.js';
export { withEmulator } from './emulator.js';
// A store of your own: the interface the worker calls, and the contract the built-in stores pass (docs/stores.md).
export { idempotencyStoreContract } from './store-contract.js';
export type { ContractRunner, MakeStore, MakeStoreOptions, PrivateServer, StoreContractOptions } from './store-contract.js';
export type { ClaimResult, ClaimState, FailureEntry, FailureHistory, IdempotencyStore } from '../idempotency/store.js';
export type { TestEnvironment, WithEmulatorOptions, TestWorkerOptions, ObservedOutcome } from './emulator.js';
