import type { Dispatcher } from 'undici';
import { ConfigError } from '../errors.js';
import type {
  AckRequest,
  AckResponse,
  PullParams,
  Source,
  SourceEntry,
  SourceEntryList,
  SourceProperty,
  SourcePropertyUpdate,
  SourceUpdate,
  TypedIngestRequest,
  TypedIngestResponse,
} from '../types.js';
import type { ConsumerApi, PullResult } from './consumer-api.js';
import { acknowledge, pull, setPaused } from './consumers.js';
import { AuthError } from './errors.js';
import { OwnAgent, resolveDispatcher, type HttpDispatcher } from './lazy-undici.js';
import { checkUrl } from './options.js';
import { getAccessCatalog, type AccessCatalogItem } from './resources/catalog.js';
import { LegacyImportApi } from './resources/legacy-import.js';
import { ManagedTagsApi } from './resources/tags.js';
import { resolveRetryPolicy, type RetryPolicy } from './retry.js';
import { getEntries, getEntry, ingest, patchSource, putProperty, type CallOptions, type IngestOptions } from './sources.js';
import { apiKeyCredential, ClientCredentialsTokenProvider, type Credential } from './token-provider.js';
import { Transport } from './transport.js';

export interface ClientOptions {
  /** Public API base, e.g. `http://127.0.0.1:8787`; a path prefix is kept. */
  baseUrl: string;
  /** Token issuer base; the token is at `{authUrl}/oauth2/token`. Default `baseUrl`. */
  authUrl?: string;
  /** Tenant ID, the token audience. Required with client credentials. */
  tenant?: string;
  clientId?: string;
  /** The client secret, or a function read at each token request (e.g. from a mounted file). */
  clientSecret?: string | (() => string | Promise<string>);
  /** Organization API key, sent as `x-api-key`; the alternative to client credentials. */
  apiKey?: string;
  /** Space-delimited scopes of the token request. Default: none sent (every scope enabled for the app). */
  scope?: string;
  /** Backoff of the calls that retry (ingest, reads, metadata, pause/resume); false disables it. */
  retry?: Partial<RetryPolicy> | false;
  /** undici dispatcher (a MockAgent in tests, a shared Agent). Default: an own keep-alive Agent, closed by `close()`. */
  dispatcher?: Dispatcher;
  /** Connections per origin of the own Agent. Default 8. Ignored with `dispatcher`. */
  connections?: number;
  /** Default `durable-worker`. */
  userAgent?: string;
  /** Deadline of one HTTP exchange (headers and body), in ms. Default 30_000. */
  requestTimeoutMs?: number;
}

export interface PlatformClient extends ConsumerApi {
  pull(destinationId: string, params: PullParams, signal?: AbortSignal): Promise<PullResult>;
  acknowledge(destinationId: string, ack: AckRequest, signal?: AbortSignal): Promise<AckResponse>;
  ensureCredential(signal?: AbortSignal): Promise<void>;
  /** The current bearer token. A secret: never log it. Throws AuthError with an API key client. */
  token(signal?: AbortSignal): Promise<string>;
  ingest(sourceId: string, request: TypedIngestRequest, options?: IngestOptions): Promise<TypedIngestResponse>;
  getEntries(sourceId: string, ids: readonly string[], options?: CallOptions): Promise<SourceEntryList>;
  getEntry(sourceId: string, entryId: string, options?: CallOptions): Promise<SourceEntry>;
  putProperty(sourceId: string, propertyId: string, update: SourcePropertyUpdate, options?: CallOptions): Promise<SourceProperty>;
  patchSource(sourceId: string, update: SourceUpdate, options?: CallOptions): Promise<Source>;
  /** Managed tags: `list` (async iterator over every page), `pages`, `listPage`, `get`, `delete`. */
  readonly managedTags: ManagedTagsApi;
  /** `GET /v1/applications/access-catalog`: the access options an application can be granted (a tree). */
  getAccessCatalog(options?: CallOptions): Promise<AccessCatalogItem[]>;
  /** Legacy import operations: `verify` and `import` (`/datasources/{dataSource}/import[/verify]`). */
  readonly legacyImport: LegacyImportApi;
  pause(destinationId: string, options?: CallOptions): Promise<void>;
  resume(destinationId: string, options?: CallOptions): Promise<void>;
  /** Closes the connection pool when the client created it; idempotent. */
  close(): Promise<void>;
}

/** Builds the platform client. Bad options throw ConfigError naming the option; nothing is sent yet. */
export function createClient(options: ClientOptions): PlatformClient {
  const baseUrl = checkUrl('baseUrl', options.baseUrl);
  const authUrl = options.authUrl === undefined ? baseUrl : checkUrl('authUrl', options.authUrl);
  const ownsDispatcher = options.dispatcher === undefined;
  // Our own Agent is created, and undici loaded, at the first request (src/client/lazy-undici.ts).
  const dispatcher: HttpDispatcher = options.dispatcher ?? new OwnAgent({ connections: checkConnections(options.connections), keepAliveTimeout: 10_000 });
  const userAgent = options.userAgent ?? 'durable-worker';
  const requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
  if (!Number.isFinite(requestTimeoutMs) || requestTimeoutMs <= 0) {
    throw new ConfigError(`requestTimeoutMs must be a positive number (got ${requestTimeoutMs})`, 'requestTimeoutMs');
  }
  let retryPolicy: RetryPolicy;
  try {
    retryPolicy = resolveRetryPolicy(options.retry);
  } catch (err) {
    throw new ConfigError((err as Error).message, 'retry');
  }

  const tokenProvider = createTokenProvider(options, authUrl, dispatcher, userAgent);
  const credential: Credential = tokenProvider ?? apiKeyCredential(options.apiKey as string);
  const transport = new Transport({ baseUrl, dispatcher, credential, retryPolicy, userAgent, requestTimeoutMs });
  let closing: Promise<void> | undefined;

  return {
    pull: (destinationId, params, signal) => pull(transport, destinationId, params, signal),
    acknowledge: (destinationId, ack, signal) => acknowledge(transport, destinationId, ack, signal),
    ensureCredential: async (signal) => {
      // The HTTP agent too (undici loaded): a worker calls this while its threads start (docs/benchmarks.md#cold-start).
      await Promise.all([credential.apply(signal), resolveDispatcher(dispatcher)]);
    },
    token: async (signal) => {
      if (!tokenProvider) throw new AuthError({ status: 0, message: 'this client uses an API key; it has no bearer token' });
      return tokenProvider.getToken(signal);
    },
    ingest: (sourceId, request, callOptions) => ingest(transport, sourceId, request, callOptions),
    getEntries: (sourceId, ids, callOptions) => getEntries(transport, sourceId, ids, callOptions),
    getEntry: (sourceId, entryId, callOptions) => getEntry(transport, sourceId, entryId, callOptions),
    putProperty: (sourceId, propertyId, update, callOptions) => putProperty(transport, sourceId, propertyId, update, callOptions),
    patchSource: (sourceId, update, callOptions) => patchSource(transport, sourceId, update, callOptions),
    managedTags: new ManagedTagsApi(transport),
    getAccessCatalog: (callOptions) => getAccessCatalog(transport, callOptions),
    legacyImport: new LegacyImportApi(transport),
    pause: (destinationId, callOptions) => setPaused(transport, destinationId, true, callOptions?.signal),
    resume: (destinationId, callOptions) => setPaused(transport, destinationId, false, callOptions?.signal),
    close: () => {
      closing ??= ownsDispatcher ? dispatcher.close() : Promise.resolve();
      return closing;
    },
  };
}

function createTokenProvider(
  options: ClientOptions,
  authUrl: string,
  dispatcher: HttpDispatcher,
  userAgent: string,
): ClientCredentialsTokenProvider | undefined {
  const hasClientCredentials = options.clientId !== undefined || options.clientSecret !== undefined;
  if (options.apiKey !== undefined && hasClientCredentials) {
    throw new ConfigError('give either apiKey or clientId/clientSecret, not both', 'apiKey');
  }
  if (options.apiKey !== undefined) {
    if (typeof options.apiKey !== 'string' || options.apiKey === '') throw new ConfigError('apiKey must not be empty', 'apiKey');
    return undefined;
  }
  if (!options.clientId) throw new ConfigError('clientId is required (or give apiKey)', 'clientId');
  if (options.clientSecret === undefined || options.clientSecret === '') {
    throw new ConfigError('clientSecret is required with clientId', 'clientSecret');
  }
  if (!options.tenant) throw new ConfigError('tenant is required with client credentials (it is the token audience)', 'tenant');
  return new ClientCredentialsTokenProvider({
    authUrl,
    clientId: options.clientId,
    clientSecret: options.clientSecret,
    audience: options.tenant,
    scope: options.scope,
    dispatcher,
    userAgent,
    requestTimeoutMs: options.requestTimeoutMs ?? 10_000,
  });
}

function checkConnections(value: number | undefined): number {
  const connections = value ?? 8;
  if (!Number.isInteger(connections) || connections < 1) {
    throw new ConfigError(`connections must be an integer >= 1 (got ${value})`, 'connections');
  }
  return connections;
}

export type { ConsumerApi, PullResult } from './consumer-api.js';
export type { CallOptions, IngestOptions } from './sources.js';
export type { RetryPolicy } from './retry.js';
export type { AccessCatalogItem } from './resources/catalog.js';
export type { LegacyImportAccepted, LegacyImportRequest, LegacyImportVerified } from './resources/legacy-import.js';
export type { ManagedTag, ManagedTagFilters, ManagedTagListOptions, ManagedTagPage } from './resources/tags.js';
export { LegacyImportApi } from './resources/legacy-import.js';
export { ManagedTagsApi } from './resources/tags.js';
export {
  createDestinationClient,
  DestinationTokenProvider,
  destinationTokenRefreshAfterMs,
  formatDestinationDateTime,
  toGetQuery,
  toPostBody,
} from './destinations/index.js';
export type {
  DestinationClient,
  DestinationClientOptions,
  DestinationFacet,
  DestinationGetQuery,
  DestinationPostQuery,
  DestinationQueryBase,
  DestinationQueryResponse,
  DestinationResult,
  DestinationResultMeta,
  DestinationTokenOptions,
  FilterCriteria,
  FilterOperator,
  FilterQuery,
  FilterValue,
} from './destinations/index.js';
export { ApiError, AuthError, IngestValidationError, NetworkError, isRetryable, retryAfterMs } from './errors.js';
export { DEFAULT_RETRY_POLICY, computeRetryDelayMs, withRetry } from './retry.js';
