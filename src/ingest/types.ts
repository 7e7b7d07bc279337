import type { NewPropertyFound, PropertyDataType } from '../types.js';

/** What the caller knows of a source's property configuration, keyed by property ID (any case). */
export interface ConfiguredProperty {
  /** null: the property exists (e.g. created by PUT) but has no type yet, so ingest infers one. */
  type: PropertyDataType | null;
  delimiter: string | null;
}

export type ConfiguredProperties = ReadonlyMap<string, ConfiguredProperty>;

/**
 * Tenant ceilings of typed ingest (spec, Limits: "Request size, entry size and property-value size
 * ceilings are tenant-configured"; the numbers are not shown). Exceeding one is a validation error
 * that names the ceiling (spec, Errors).
 */
export interface IngestLimits {
  /** UTF-8 bytes of the whole JSON request. Default 10 MiB. */
  maxRequestBytes: number;
  /** UTF-8 bytes of one entry as JSON. Default 1 MiB. */
  maxEntrySizeBytes: number;
  /** UTF-8 bytes of one property value in its string-at-rest form. Default 256 KiB. */
  maxPropertyValueBytes: number;
}

export const DEFAULT_INGEST_LIMITS: Readonly<IngestLimits> = Object.freeze({
  maxRequestBytes: 10 * 1024 * 1024,
  maxEntrySizeBytes: 1024 * 1024,
  maxPropertyValueBytes: 256 * 1024,
});

/** Measurements the caller already has (the server knows the raw body size). */
export interface IngestMeasurements {
  /** Bytes of the request as received; default: bytes of `JSON.stringify(body)`. */
  requestBytes?: number;
}

/** A JSON value of an ingest property after validation; `bigint` only for integers beyond 2^53 parsed exactly. */
export type IngestValue = string | number | bigint | boolean | string[] | null;

/** One validated property value, canonical and ready to store. */
export interface PlannedProperty {
  /** Lowercase (spec rule 9). */
  id: string;
  /** Canonical BCP 47 casing; null for non-localized types. */
  language: string | null;
  /** The type the value was checked against: configured, or inferred by this request. */
  type: PropertyDataType;
  /** Delimiter of list types (configured, or `,` for new ones); null for other types. */
  delimiter: string | null;
  /** The JSON value as given (spec rule 2: values keep their JSON type at the boundary). */
  value: IngestValue;
  /** The string-at-rest form queued for storage (spec rule 2); `''` when the value clears the property. */
  atRest: string;
  /** Spec rule 6: a null value clears the property by storing an empty value. */
  cleared: boolean;
}

export interface PlannedEntry {
  /** Entry ID as given. */
  id: string;
  properties: PlannedProperty[];
}

/** Everything a server needs to queue an accepted request. */
export interface IngestPlan {
  entries: PlannedEntry[];
  /** Spec rule 10: properties absent from (or untyped in) the configuration, with the inferred type. */
  newPropertiesFound: NewPropertyFound[];
  /** Bytes of the request (measured by the caller, or of its JSON serialisation). */
  requestBytes: number;
}

/** Messages keyed by request path (`entries[3].properties[1].value`), the shape of `errors` in a validation problem. */
export type IngestErrors = Record<string, string[]>;

export type IngestValidation = { ok: true; plan: IngestPlan } | { ok: false; errors: IngestErrors };
