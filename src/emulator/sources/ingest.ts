import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import * as z from 'zod';
import { entryKey, parseJsonExact, typedIngestRequestSchema, validateTypedIngest, type IngestPlan } from '../../ingest/index.js';
import { typedIngestResponseSchema } from '../../ingest/response-schema.js';
import { eventTraceCarrier, type TraceCarrier } from '../../tracing/trace-context.js';
import type { SourceEntryUpdatedData, TypedIngestResponse } from '../../types.js';
import type { EmulatorContext, NewEvent } from '../context.js';
import { readBody } from '../http/body.js';
import { HttpProblem, validationProblem } from '../http/problem.js';
import { RateWindow } from '../http/rate-window.js';
import { component } from '../openapi/components.js';
import type { OperationSpec } from '../openapi/operation.js';
import { answer, pathParameter, problem, rateLimited, validation } from '../openapi/responses.js';
import type { TenantIngestLimits } from './limits.js';
import { authorizeIngest, WRITE_SOURCES } from './access.js';
import type { ApplyQueue } from './apply-queue.js';
import { entryReadShape, type ReadEntry } from './read-shape.js';
import { configuredProperties, nowIso, registerInferred, upsertEntry, type SourceStore } from './store.js';

/** A batch accepted with 202 and waiting to be applied. */
export interface IngestJob {
  kind: 'ingest';
  tenant: string;
  sourceId: string;
  plan: IngestPlan;
  /** The ingest request's trace context, stamped on every event it emits. */
  trace?: TraceCarrier;
}

export interface IngestDeps {
  store: SourceStore;
  queue: ApplyQueue<IngestJob | { kind: 'reindex'; run(): void }>;
  autoCreateSources: boolean;
  /** The tenant's ceilings and request rate (spec, Limits: applied per tenant). */
  limitsFor: (tenant: string) => TenantIngestLimits;
  /** Clock of the request-rate window, epoch ms. Default `Date.now`. */
  nowMs?: () => number;
}

const TypedIngestRequest = component('TypedIngestRequest', typedIngestRequestSchema);

/**
 * The emulator's choice, as the spec shows no tracing: a W3C `traceparent` (and `tracestate`) on the
 * ingest request travels on every `source_entry.updated` event the ingest emits, as the CloudEvents
 * distributed tracing extension's attributes, so a worker's spans join the trace of the request.
 * An invalid value is ignored, as W3C Trace Context says (the ingest is not refused for it).
 */
const TRACE_HEADERS = {
  traceparent: {
    description:
      'W3C Trace Context of the caller (emulator only; the spec shows no tracing): copied onto every event the ingest emits (CloudEvents distributed tracing extension). Any value is accepted; one that is not a valid `traceparent` (`00-<32 hex trace id>-<16 hex span id>-<2 hex flags>`, ids not all zero) is ignored, as W3C Trace Context says.',
    schema: z.string(),
    example: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
  },
  tracestate: {
    description:
      'W3C vendor trace state, copied with a valid `traceparent` (emulator only). Any value is accepted; it is dropped without a valid `traceparent`, when longer than 512 characters or when it holds characters other than printable ASCII.',
    schema: z.string(),
    example: 'vendor=opaque-value',
  },
};

/** The request's trace context, when its `traceparent` is valid (a repeated header counts as absent). */
function requestTraceCarrier(req: IncomingMessage): TraceCarrier | undefined {
  return eventTraceCarrier({ traceparent: req.headers.traceparent, tracestate: req.headers.tracestate });
}
const TypedIngestResponse = component('TypedIngestResponse', typedIngestResponseSchema);

/**
 * The request schema is structural; rules that need the whole request or the source configuration
 * (inference, duplicates, types, ceilings) are enforced by `validateTypedIngest` and described here.
 */
export const TYPED_INGEST: OperationSpec = {
  method: 'POST',
  path: '/sources/{sourceId}',
  operationId: 'ingestTyped',
  summary: 'Typed source ingest: every entry is an upsert; all-or-nothing validation.',
  description: [
    'Values keep their JSON type and must match the configured property type (Text: string; LocalizedText: string with `language`;',
    'List: array of strings; Boolean; Timestamp: ISO 8601 string; Integer: whole number within 64 bits; Decimal: finite number).',
    'Unconfigured properties are inferred from all their values in the request. A `202` means queued: reads reflect it once applied.',
  ].join(' '),
  tag: 'Ingest',
  security: { kind: 'tenant', scopes: [WRITE_SOURCES] },
  pathParameters: { sourceId: pathParameter('Customer-facing source ID within the tenant.', 'products') },
  headers: TRACE_HEADERS,
  requestBody: {
    schema: TypedIngestRequest,
    example: {
      entries: [
        {
          id: 'product-1',
          properties: [
            { id: 'title', value: 'Kettle', language: 'en' },
            { id: 'price', value: 25.5 },
            { id: 'tags', value: ['kitchen'] },
          ],
        },
      ],
    },
  },
  responses: {
    '202': answer('The whole batch is valid and queued.', TypedIngestResponse),
    '400': validation('Any validation failure, exceeded tenant ceilings included (named with their value); messages keyed by request path.'),
    '403': problem('No `write:sources` scope, a data-provider token, or the source is not granted.'),
    '404': problem('Unknown source, when the emulator does not create sources on first ingest (config `autoCreateSources: false`).'),
    '429': rateLimited("The tenant's typed ingest request rate is spent (`requestsPerMinute`), or an injected fault."),
  },
  // An oversized body is a validation problem naming the ceiling (spec, Errors), not a 413.
  omitImplied: ['413'],
};

/** `POST /sources/{sourceId}` (spec: Typed source ingest; no version prefix). */
export function registerIngestRoute(ctx: EmulatorContext, deps: IngestDeps): void {
  const rate = new RateWindow(60_000, deps.nowMs);
  ctx.router.add(TYPED_INGEST, async ({ req, params }) => {
    const sourceId = params.sourceId!;
    const principal = authorizeIngest(ctx, req, sourceId);
    if (deps.queue.isClosed) throw new HttpProblem(503, 'The emulator is shutting down.');
    const tenant = principal.tenant;
    const limits = deps.limitsFor(tenant);
    if (limits.requestsPerMinute !== undefined) {
      try {
        // Spec, Limits: the request rate is applied per tenant with 429 plus Retry-After.
        rate.admit(tenant, limits.requestsPerMinute, (n) => `Typed ingest request rate above ${n} per minute for this tenant.`);
      } catch (err) {
        req.resume();
        throw err;
      }
    }
    let record = deps.store.get(tenant, sourceId);
    if (record === undefined && !deps.autoCreateSources) {
      req.resume();
      throw new HttpProblem(404, `Source '${sourceId}' does not exist.`);
    }

    const { body, requestBytes } = await readIngestBody(req, limits.maxRequestBytes);
    const configured = record ? configuredProperties(record) : new Map();
    const validation = validateTypedIngest(body, configured, limits, { requestBytes });
    // Spec rule 3: all-or-nothing; on any failure nothing is queued (and no source is created).
    if (!validation.ok) throw validationProblem(validation.errors);

    // In the development configuration ingest to an unknown source creates it, so a demo needs no setup.
    record ??= deps.store.create(tenant, sourceId);
    const { plan } = validation;
    for (const found of plan.newPropertiesFound) {
      record.pending.set(found.id, { type: found.type, delimiter: found.delimiter ?? null });
    }
    const trace = requestTraceCarrier(req);
    deps.queue.push(trace === undefined ? { kind: 'ingest', tenant, sourceId, plan } : { kind: 'ingest', tenant, sourceId, plan, trace });
    const response: TypedIngestResponse = {
      correlationId: randomUUID(),
      sourceId,
      acceptedAt: nowIso(),
      acceptedEntryCount: plan.entries.length,
      newPropertiesFound: plan.newPropertiesFound,
    };
    return { status: 202, body: response };
  });
}

/** The data of `source_entry.updated` as the emulator writes it (exact Integers: see ReadEntry). */
type ReadEntryUpdated = Omit<SourceEntryUpdatedData, 'previous' | 'current'> & { previous: ReadEntry | null; current: ReadEntry };

/**
 * Applies an accepted batch: registers its inferred properties, upserts its entries, then appends
 * one `source_entry.updated` event per entry (spec, Events 1: subject is the entry ID,
 * the data carries previous and current values).
 */
export function applyIngest(ctx: EmulatorContext, store: SourceStore, job: IngestJob): void {
  const record = store.get(job.tenant, job.sourceId);
  if (record === undefined) return;
  registerInferred(record, job.plan.newPropertiesFound);
  const now = nowIso();
  const events: NewEvent[] = [];
  for (const planned of job.plan.entries) {
    const existing = record.entries.get(entryKey(planned.id));
    const previous = existing ? entryReadShape(existing, record.properties, false) : null;
    const entry = upsertEntry(record, planned, now);
    const data: ReadEntryUpdated = {
      sourceId: job.sourceId,
      entryId: entry.id,
      previous,
      current: entryReadShape(entry, record.properties, false),
    };
    events.push(
      job.trace === undefined
        ? { type: 'source_entry.updated', subject: entry.id, data }
        : { type: 'source_entry.updated', subject: entry.id, data, ...job.trace },
    );
  }
  if (events.length > 0) ctx.appendEvents(job.tenant, events);
}

/**
 * The raw body, parsed keeping big integers exact (see ingest/exact-json.ts). A body above the
 * tenant's request ceiling is a validation error naming the ceiling (spec, Errors: "Limits exceeded
 * at ingest are reported in the validation errors together with the configured ceiling").
 */
async function readIngestBody(req: IncomingMessage, maxRequestBytes: number): Promise<{ body: unknown; requestBytes: number }> {
  const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/json' && !type.endsWith('+json')) {
    req.resume();
    throw new HttpProblem(415, `Content-Type must be application/json (got ${type || 'none'}).`);
  }
  let raw: Buffer;
  try {
    raw = await readBody(req, maxRequestBytes);
  } catch (err) {
    if (err instanceof HttpProblem && err.status === 413) {
      throw validationProblem({ $: [`request is larger than the ceiling of ${maxRequestBytes} bytes (maxRequestBytes)`] });
    }
    throw err;
  }
  if (raw.length === 0) throw validationProblem({ $: ['A JSON body is required.'] });
  try {
    return { body: parseJsonExact(raw.toString('utf8')), requestBytes: raw.length };
  } catch (err) {
    throw validationProblem({ $: [`The body is not valid JSON: ${(err as Error).message}`] });
  }
}
