import type { validateTypedIngest } from '../ingest/validate.js';
import type {
  SourceEntry,
  SourceEntryList,
  Source,
  SourceProperty,
  SourcePropertyUpdate,
  SourceUpdate,
  TypedIngestRequest,
  TypedIngestResponse,
} from '../types.js';
import { ApiError, IngestValidationError, isRetryable } from './errors.js';
import { pathOf, requireId, type Send } from './transport.js';

/** Options every call takes. */
export interface CallOptions {
  signal?: AbortSignal | undefined;
}

export interface IngestOptions extends CallOptions {
  /**
   * Validate the request client-side first with the rules of the spec (typed source ingest 1-9),
   * throwing IngestValidationError without sending anything. Default true. With false the request
   * is sent exactly as given (useful to exercise the server's own validation).
   */
  validate?: boolean;
  /** Property configuration of the source, when the caller knows it (id -> type and delimiter). */
  configured?: Parameters<typeof validateTypedIngest>[1];
  /** Tenant ceilings, when the caller knows them. */
  limits?: Parameters<typeof validateTypedIngest>[2];
}

/**
 * Spec, Errors: typed ingest is retried on 429 and 5xx with bounded exponential backoff (and on
 * network errors: every entry is an upsert, so repeating a batch is safe), never after a 202 and
 * never on 408 or any other 4xx.
 */
export function isIngestRetryable(err: unknown): boolean {
  return isRetryable(err) && (err as { status?: unknown }).status !== 408;
}

/** `POST /sources/{sourceId}` (no version prefix): 202 typed ingest response. */
export async function ingest(transport: Send, sourceId: string, request: TypedIngestRequest, options: IngestOptions = {}): Promise<TypedIngestResponse> {
  const path = pathOf`/sources/${requireId('sourceId', sourceId)}`;
  let body: unknown = request;
  if (options.validate !== false) {
    // Imported here, not with the client: the rules pull in zod, which a worker thread that only
    // imports `defineHandler` from the package entry should not load (src/client/lazy-undici.ts).
    const rules = await import('../ingest/validate.js');
    const result = rules.validateTypedIngest(request, options.configured, options.limits);
    if (!result.ok) throw new IngestValidationError(result.errors);
    body = strictIngestBody(request);
  }
  const response = await transport.send({
    method: 'POST',
    path,
    body,
    signal: options.signal,
    retry: true,
    retryable: isIngestRetryable,
  });
  return readIngestResponse(response.body, response.status, path, sourceId);
}

/** `GET /v1/sources/{sourceId}/entries?id=..` with 1..100 ids (spec, Limits). */
export async function getEntries(transport: Send, sourceId: string, ids: readonly string[], options: CallOptions = {}): Promise<SourceEntryList> {
  const path = pathOf`/v1/sources/${requireId('sourceId', sourceId)}/entries`;
  if (!Array.isArray(ids) || ids.length < 1 || ids.length > 100) {
    throw new RangeError(`ids must hold 1..100 entry ids (got ${Array.isArray(ids) ? ids.length : typeof ids})`);
  }
  ids.forEach((id, index) => requireId(`ids[${index}]`, id));
  const response = await transport.send({ method: 'GET', path, query: { id: ids }, signal: options.signal, retry: true });
  const raw = asRecord(response.body);
  if (raw === undefined || !Array.isArray(raw.items)) throw malformed('GET', path, response.status, 'a list without items');
  return { ...raw, items: raw.items as SourceEntry[] };
}

/** `GET /v1/sources/{sourceId}/entries/{entryId}`: 200 one entry; a missing entry is ApiError 404. */
export async function getEntry(transport: Send, sourceId: string, entryId: string, options: CallOptions = {}): Promise<SourceEntry> {
  const path = pathOf`/v1/sources/${requireId('sourceId', sourceId)}/entries/${requireId('entryId', entryId)}`;
  const response = await transport.send({ method: 'GET', path, signal: options.signal, retry: true });
  const raw = asRecord(response.body);
  if (raw === undefined || typeof raw.id !== 'string') throw malformed('GET', path, response.status, 'an entry without id');
  return { ...raw, properties: Array.isArray(raw.properties) ? raw.properties : [] } as SourceEntry;
}

/** `PUT /v1/sources/{sourceId}/properties/{propertyId}`: idempotent, so retried on 429/5xx. */
export async function putProperty(
  transport: Send,
  sourceId: string,
  propertyId: string,
  update: SourcePropertyUpdate,
  options: CallOptions = {},
): Promise<SourceProperty> {
  const path = pathOf`/v1/sources/${requireId('sourceId', sourceId)}/properties/${requireId('propertyId', propertyId)}`;
  const body = pick(update, ['displayName', 'delimiter', 'description']);
  const response = await transport.send({ method: 'PUT', path, body, signal: options.signal, retry: true });
  const raw = asRecord(response.body);
  if (raw === undefined) throw malformed('PUT', path, response.status, 'no source property');
  return raw as unknown as SourceProperty;
}

/** `PATCH /v1/sources/{sourceId}`: the same patch applied twice gives the same source, so retried. */
export async function patchSource(transport: Send, sourceId: string, update: SourceUpdate, options: CallOptions = {}): Promise<Source> {
  const path = pathOf`/v1/sources/${requireId('sourceId', sourceId)}`;
  const body = pick(update, ['name', 'description']);
  const response = await transport.send({ method: 'PATCH', path, body, signal: options.signal, retry: true });
  const raw = asRecord(response.body);
  if (raw === undefined) throw malformed('PATCH', path, response.status, 'no source');
  return raw as unknown as Source;
}

/** Only the spec's fields (entries[].id, .properties[].id/value/language), whatever else the caller's objects carry. */
function strictIngestBody(request: TypedIngestRequest): TypedIngestRequest {
  return {
    entries: request.entries.map((entry) => ({
      id: entry.id,
      properties: entry.properties.map((property) => ({
        id: property.id,
        value: property.value,
        ...(property.language === undefined ? {} : { language: property.language }),
      })),
    })),
  };
}

function readIngestResponse(body: unknown, status: number, path: string, sourceId: string): TypedIngestResponse {
  const raw = asRecord(body);
  if (raw === undefined || typeof raw.correlationId !== 'string') {
    throw malformed('POST', path, status, 'an ingest response without correlationId');
  }
  const count = Number(raw.acceptedEntryCount);
  return {
    ...raw,
    correlationId: raw.correlationId,
    sourceId: typeof raw.sourceId === 'string' ? raw.sourceId : sourceId,
    acceptedAt: typeof raw.acceptedAt === 'string' ? raw.acceptedAt : '',
    acceptedEntryCount: Number.isFinite(count) ? count : 0,
    newPropertiesFound: Array.isArray(raw.newPropertiesFound) ? raw.newPropertiesFound : [],
  } as TypedIngestResponse;
}

function pick<T extends object>(value: T, keys: readonly (keyof T)[]): Partial<T> {
  const out: Partial<T> = {};
  for (const key of keys) if (value[key] !== undefined) out[key] = value[key];
  return out;
}

function asRecord(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

function malformed(method: string, path: string, status: number, what: string): ApiError {
  return new ApiError({ status, method, path, message: `${method} ${path} answered ${status} with ${what}` });
}
