/**
 * `durable-worker/client`: the typed client for the whole platform API, and the destinations'
 * own small client (docs/client.md, docs/api.md).
 */
export {
  createClient,
  createDestinationClient,
  formatDestinationDateTime,
  ApiError,
  AuthError,
  IngestValidationError,
  NetworkError,
  isRetryable,
} from '../client/index.js';
export type { ClientOptions, PlatformClient, CallOptions, IngestOptions, RetryPolicy, ConsumerApi, PullResult } from '../client/index.js';
export type {
  AccessCatalogItem,
  LegacyImportAccepted,
  LegacyImportRequest,
  LegacyImportVerified,
  ManagedTag,
  ManagedTagFilters,
  ManagedTagListOptions,
  ManagedTagPage,
} from '../client/index.js';
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
} from '../client/index.js';
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
  TypedIngestRequest,
  TypedIngestResponse,
} from '../types.js';
