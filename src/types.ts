/**
 * Wire types of the Data Platform API (docs/platform-api.md), shared by the client,
 * the emulator and the worker. Field names follow the spec to the letter.
 */

/** Property data types of the spec; `null` means "no type configured". */
export type PropertyDataType = 'Text' | 'LocalizedText' | 'List' | 'LocalizedList' | 'Boolean' | 'Timestamp' | 'Integer' | 'Decimal' | 'Wildcard';

export type PropertyValue = string | number | boolean | string[] | null;

/** Property item of the read shape: every field is always present. */
export interface PropertyItem {
  id: string;
  value: PropertyValue;
  type: PropertyDataType | null;
  delimiter: string | null;
  lastUpdated: string;
  language: string | null;
}

export interface SourceEntry {
  id: string;
  properties: PropertyItem[];
  lastUpdated: string;
}

export interface SourceEntryList {
  items: SourceEntry[];
}

export interface TypedIngestProperty {
  id: string;
  value: PropertyValue;
  language?: string;
}

export interface TypedIngestEntry {
  id: string;
  properties: TypedIngestProperty[];
}

export interface TypedIngestRequest {
  entries: TypedIngestEntry[];
}

export interface NewPropertyFound {
  id: string;
  type: PropertyDataType;
  delimiter?: string;
}

export interface TypedIngestResponse {
  correlationId: string;
  sourceId: string;
  acceptedAt: string;
  acceptedEntryCount: number;
  newPropertiesFound: NewPropertyFound[];
}

export type SourcePropertyState = 'Active' | 'Updating' | 'Deleting';

export interface SourcePropertyUpdate {
  displayName?: string | null;
  delimiter?: string | null;
  description?: string | null;
}

export interface SourceProperty {
  id: string;
  displayName: string;
  description: string;
  type: PropertyDataType | null;
  delimiter: string;
  state: SourcePropertyState;
}

export interface SourceUpdate {
  name?: string | null;
  description?: string | null;
}

export interface Source {
  id: string;
  name: string;
  description: string;
  status: string;
  type: string;
  createdAt: string;
  updatedAt: string;
}

/** RFC 9457 problem details as the spec shapes them. */
export interface ProblemDetails {
  type: string;
  title: string;
  status: number;
  detail: string;
  instance: string;
  traceId: string;
  /** Validation problems only: messages keyed by request path, e.g. `entries[3].properties[1].value`. */
  errors?: Record<string, string[]>;
}

export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  scope: string;
}

export interface IssuerError {
  error: string;
  error_description: string;
}

/** A CloudEvents 1.0 event as delivered by a durable consumer. */
export interface CloudEvent<TType extends string = string, TData = unknown> {
  specversion: '1.0';
  id: string;
  type: TType;
  subject: string;
  /** Decimal string, increasing by 1 per tenant stream. */
  sequence: string;
  data: TData;
  source?: string;
  time?: string;
  datacontenttype?: string;
  /** CloudEvents distributed tracing extension: the W3C trace context the event was created in. */
  traceparent?: string;
  /** CloudEvents distributed tracing extension: vendor trace state to go with `traceparent`. */
  tracestate?: string;
}

/**
 * Data of `source_entry.updated` (spec: "Entry update events carry previous and current values").
 * The spec does not show the schema; we carry the entry in its read shape before and after the ingest.
 */
export interface SourceEntryUpdatedData {
  sourceId: string;
  entryId: string;
  /** The entry before this ingest was applied; null when the entry is new. */
  previous: SourceEntry | null;
  current: SourceEntry;
}

export type SourceEntryUpdatedEvent = CloudEvent<'source_entry.updated', SourceEntryUpdatedData>;

/** Pull response `200`. */
export interface LeaseBatch {
  leaseId: string;
  generation: number;
  attempt: number;
  events: CloudEvent[];
}

export type AckStatus = 'ok' | 'failed';

export interface AckRequest {
  leaseId: string;
  generation: number;
  status: AckStatus;
}

export interface AckResponse {
  status: 'committed' | 'requeued' | 'stale';
  /** Sequence of the last committed event; null before the first commit. */
  committed: string | null;
}

export interface PullParams {
  /** Maximum events in the batch, 1..100 (default 20). */
  limit?: number;
  /** Lease duration in seconds, 1..600 (default 60). */
  visibilitySeconds?: number;
  /** Worker identity, up to 200 characters. */
  workerId?: string;
}

/** Spec: Resources, Application access catalog item (a tree through `children`). */
export interface AccessCatalogItem {
  key: string;
  /** `Group` is the one value the spec shows; the emulator's leaves use `Scope` (values beyond Group are not shown). */
  grantType: string;
  label: string;
  description: string;
  resourceId: string;
  audience: string;
  children: AccessCatalogItem[];
}

/** Legacy import `202` answer (shape not shown in the spec: modelled on the typed ingest response). */
export interface LegacyImportAccepted {
  correlationId: string;
  dataSource: string;
  acceptedAt: string;
  acceptedEntryCount: number;
}

/** Legacy import verify `200` answer (shape not shown in the spec). */
export interface LegacyImportVerified {
  dataSource: string;
  valid: true;
  entryCount: number;
}

/** What the lease knows about the delivery of one event; becomes the handler's ctx. */
export interface JobContext {
  /** This handler's attempt on this event: its failed runs so far + 1 (kept in the idempotency store). */
  attempt: number;
  /** The lease's delivery attempt (the platform's `attempt`: how often its events were handed out). */
  deliveryAttempt: number;
  generation: number;
  workerId: string;
  leaseId: string;
  /** Epoch ms of the lease deadline (lease expiry minus the safety margin); a handler's own `ctx.deadlineMs` may come sooner (its timeout). */
  leaseDeadlineMs: number;
}
