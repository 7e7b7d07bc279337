/** The public face of durable-worker: what users import, by name. */
export { defineHandler } from './handlers/define.js';
export type { Handler, HandlerContext, HandlerDefinition, HandlerLogger, EventFor, EventTypeMap } from './handlers/define.js';
export { PermanentError, DurableWorkerError, ErrorCodes, hasCode } from './errors.js';
export type {
  AckRequest,
  AckResponse,
  AckStatus,
  CloudEvent,
  LeaseBatch,
  ProblemDetails,
  PropertyDataType,
  PropertyItem,
  PropertyValue,
  SourceEntry,
  SourceEntryUpdatedData,
  SourceEntryUpdatedEvent,
  TypedIngestRequest,
  TypedIngestResponse,
} from './types.js';
