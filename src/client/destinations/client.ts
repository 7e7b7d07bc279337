import type { Dispatcher } from 'undici';
import { ConfigError } from '../../errors.js';
import { AuthError } from '../errors.js';
import { OwnAgent, type HttpDispatcher } from '../lazy-undici.js';
import { checkUrl } from '../options.js';
import { resolveRetryPolicy, type RetryPolicy } from '../retry.js';
import type { CallOptions } from '../sources.js';
import type { AppliedCredential, Credential } from '../token-provider.js';
import { pathOf, requireId, Transport } from '../transport.js';
import { toGetQuery, toPostBody, type DestinationGetQuery, type DestinationPostQuery, type DestinationQueryResponse, type DestinationResult } from './query.js';
import { DestinationTokenProvider } from './token-provider.js';

/**
 * Decision: destinations get their own small client, not methods on PlatformClient. They live on
 * other origins (`{global_url}` for queries, `{destinations_url}` for tokens, both may differ from
 * `{base_url}`), take other credentials (the application's clientId/clientSecret exchanged at the
 * destination token endpoint, or nothing for a public destination, never the tenant token) and
 * are addressed by customer and destination rather than by tenant.
 */
export interface DestinationClientOptions {
  /** Base of destination endpoints (`{global_url}`), e.g. `http://127.0.0.1:8787`. */
  globalUrl: string;
  /** Base of the destination token service (`{destinations_url}`). Default `globalUrl`. */
  destinationsUrl?: string;
  customer: string;
  destination: string;
  /**
   * Credentials of the registered application, for a protected destination: exchanged at
   * `POST {destinationsUrl}/destinations/{destinationId}/token` and the token reused until it
   * expires. Omit both for a public destination.
   */
  clientId?: string;
  clientSecret?: string | (() => string | Promise<string>);
  /** `{destination_id}` of the token endpoint. Default `destination` (the emulator also takes the API version ID). */
  destinationId?: string;
  /**
   * Alternative to client credentials: a function giving a bearer token, e.g. an issuer token with
   * the API version ID as audience (spec, Authentication 8). Called before every request: cache in it.
   */
  accessToken?: () => string | Promise<string>;
  /** Send `Accept-Encoding: gzip` (spec: opt-in compression); answers are inflated. Default true. */
  gzip?: boolean;
  /** Backoff of queries on 429/5xx/network (they are reads); false disables it. */
  retry?: Partial<RetryPolicy> | false;
  /** undici dispatcher. Default: an own keep-alive Agent, closed by `close()`. */
  dispatcher?: Dispatcher;
  /** Default `durable-worker`. */
  userAgent?: string;
  /** Deadline of one HTTP exchange, ms. Default 30_000. */
  requestTimeoutMs?: number;
}

export interface DestinationClient {
  /** `GET {globalUrl}/{customer}/{destination}/v1/{endpoint}` with the parameters in the query string. */
  get<R = DestinationResult>(endpoint: string, query?: DestinationGetQuery, options?: CallOptions): Promise<DestinationQueryResponse<R>>;
  /** `POST` form: the parameters in a JSON body (needed for `filter` queries with must/must_not and operators). */
  post<R = DestinationResult>(endpoint: string, query?: DestinationPostQuery, options?: CallOptions): Promise<DestinationQueryResponse<R>>;
  /** The destination's own OpenAPI 3.1 description (`/v1/openapi`). */
  openApi(options?: CallOptions): Promise<Record<string, unknown>>;
  /** The destination token in use (a secret: never log it). AuthError for a client without client credentials. */
  token(signal?: AbortSignal): Promise<string>;
  /** Destination token requests sent so far (0 without client credentials). */
  readonly tokenRequestCount: number;
  /** Closes the connection pool when the client created it; idempotent. */
  close(): Promise<void>;
}

export function createDestinationClient(options: DestinationClientOptions): DestinationClient {
  const globalUrl = checkUrl('globalUrl', options.globalUrl);
  const destinationsUrl = options.destinationsUrl === undefined ? globalUrl : checkUrl('destinationsUrl', options.destinationsUrl);
  for (const key of ['customer', 'destination'] as const) {
    if (typeof options[key] !== 'string' || options[key] === '') throw new ConfigError(`${key} is required`, key);
  }
  const requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
  if (!Number.isFinite(requestTimeoutMs) || requestTimeoutMs <= 0)
    throw new ConfigError(`requestTimeoutMs must be a positive number (got ${requestTimeoutMs})`, 'requestTimeoutMs');
  let retryPolicy: RetryPolicy;
  try {
    retryPolicy = resolveRetryPolicy(options.retry);
  } catch (err) {
    throw new ConfigError((err as Error).message, 'retry');
  }
  const ownsDispatcher = options.dispatcher === undefined;
  // Created, and undici loaded, at the first request (src/client/lazy-undici.ts).
  const dispatcher: HttpDispatcher = options.dispatcher ?? new OwnAgent({ connections: 8, keepAliveTimeout: 10_000 });
  const userAgent = options.userAgent ?? 'durable-worker';

  const hasClientCredentials = options.clientId !== undefined || options.clientSecret !== undefined;
  if (hasClientCredentials && options.accessToken) throw new ConfigError('give either clientId/clientSecret or accessToken, not both', 'accessToken');
  let tokens: DestinationTokenProvider | undefined;
  let credential: Credential | undefined;
  if (hasClientCredentials) {
    if (!options.clientId) throw new ConfigError('clientId is required with clientSecret', 'clientId');
    if (options.clientSecret === undefined || options.clientSecret === '') throw new ConfigError('clientSecret is required with clientId', 'clientSecret');
    tokens = new DestinationTokenProvider({
      destinationsUrl,
      destinationId: options.destinationId ?? options.destination,
      clientId: options.clientId,
      clientSecret: options.clientSecret,
      dispatcher,
      userAgent,
      requestTimeoutMs: Math.min(requestTimeoutMs, 10_000),
      maxRetryAfterMs: retryPolicy.maxRetryAfterMs,
    });
    credential = tokens;
  } else if (options.accessToken) {
    credential = callerToken(options.accessToken);
  }
  const transport = new Transport({ baseUrl: globalUrl, dispatcher, credential, retryPolicy, userAgent, requestTimeoutMs, acceptGzip: options.gzip ?? true });
  const base = pathOf`/${options.customer}/${options.destination}/v1`;
  let closing: Promise<void> | undefined;

  const query = async <R>(method: 'GET' | 'POST', endpoint: string, params: DestinationGetQuery | DestinationPostQuery, callOptions: CallOptions) => {
    requireId('endpoint', endpoint);
    const response = await transport.send({
      method,
      path: `${base}${pathOf`/${endpoint}`}`,
      ...(method === 'GET' ? { query: toGetQuery(params as DestinationGetQuery) } : { body: toPostBody(params as DestinationPostQuery) }),
      signal: callOptions.signal,
      retry: true,
    });
    return readQueryResponse<R>(response.body);
  };

  return {
    get: (endpoint, params = {}, callOptions = {}) => query('GET', endpoint, params, callOptions),
    post: (endpoint, params = {}, callOptions = {}) => query('POST', endpoint, params, callOptions),
    openApi: async (callOptions = {}) => {
      const response = await transport.send({ method: 'GET', path: `${base}/openapi`, signal: callOptions.signal, retry: true });
      return response.body as Record<string, unknown>;
    },
    token: async (signal) => {
      if (tokens) return tokens.getToken(signal);
      if (options.accessToken) return options.accessToken();
      throw new AuthError({ status: 0, message: 'this destination client has no credentials (a public destination)' });
    },
    get tokenRequestCount() {
      return tokens?.requestCount ?? 0;
    },
    close: () => {
      closing ??= ownsDispatcher ? dispatcher.close() : Promise.resolve();
      return closing;
    },
  };
}

/** A caller-supplied bearer token; a 401 is final (we cannot ask the caller's function for a fresh one reliably). */
function callerToken(read: () => string | Promise<string>): Credential {
  return {
    apply: async (): Promise<AppliedCredential> => ({ header: 'authorization', value: `Bearer ${await read()}`, refreshable: false }),
    invalidate: () => undefined,
  };
}

function readQueryResponse<R>(body: unknown): DestinationQueryResponse<R> {
  const raw = typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>) : {};
  // Liberal: a missing results array reads as empty (spec: "empty array when no results").
  return {
    ...raw,
    language: typeof raw.language === 'string' ? raw.language : '',
    results: Array.isArray(raw.results) ? (raw.results as R[]) : [],
  } as DestinationQueryResponse<R>;
}
