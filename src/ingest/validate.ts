import type { NewPropertyFound, PropertyDataType } from '../types.js';
import { inferPropertyType, type Observation } from './infer.js';
import {
  DEFAULT_LIST_DELIMITER,
  MAX_ENTRY_ID_LENGTH,
  canonicalLanguage,
  canonicalPropertyId,
  entryKey,
  isListType,
  isLocalizedType,
  languageProblem,
  propertyIdProblem,
} from './rules.js';
import { addError, issuesToErrors, typedIngestRequestSchema, type ParsedIngestRequest } from './schema.js';
import {
  DEFAULT_INGEST_LIMITS,
  type ConfiguredProperties,
  type ConfiguredProperty,
  type IngestErrors,
  type IngestLimits,
  type IngestMeasurements,
  type IngestValidation,
  type PlannedEntry,
  type PlannedProperty,
} from './types.js';
import { serializeAtRest, valueProblem } from './values.js';

/**
 * Validates a typed ingest request against the spec's rules (Typed source ingest 1-11; Errors: 400)
 * and, when valid, plans what to queue. All-or-nothing (rule 3): any error means no plan.
 *
 * @param body the parsed JSON request
 * @param configured the source's property configuration by property ID (any case); default: none,
 *   so every property is inferred (what a client without the configuration can check)
 * @param limits tenant ceilings; omitted fields use DEFAULT_INGEST_LIMITS
 * @param measurements what the caller measured already (the server passes the raw body size)
 */
export function validateTypedIngest(
  body: unknown,
  configured: ConfiguredProperties = new Map(),
  limits?: Partial<IngestLimits>,
  measurements: IngestMeasurements = {},
): IngestValidation {
  const ceilings: IngestLimits = { ...DEFAULT_INGEST_LIMITS, ...definedOnly(limits) };
  const errors: IngestErrors = {};
  const requestBytes = measurements.requestBytes ?? jsonBytes(body);
  if (requestBytes > ceilings.maxRequestBytes) {
    addError(errors, '$', `request is ${requestBytes} bytes, above the ceiling of ${ceilings.maxRequestBytes} bytes (maxRequestBytes)`);
  }
  const parsed = typedIngestRequestSchema.safeParse(body);
  if (!parsed.success) return { ok: false, errors: issuesToErrors(parsed.error, errors) };
  const request = parsed.data;

  checkEntryIds(request, errors);
  const config = lowercaseKeys(configured);
  const observations = collectObservations(request, errors);
  const { types, newPropertiesFound } = resolveTypes(observations, config, errors);
  const entries = planEntries(request, types, ceilings, errors);
  checkEntrySizes(body, ceilings, errors);

  if (Object.keys(errors).length > 0) return { ok: false, errors };
  return { ok: true, plan: { entries, newPropertiesFound, requestBytes } };
}

/** Spec: entry IDs are unique within the request, compared case-insensitively. */
function checkEntryIds(request: ParsedIngestRequest, errors: IngestErrors): void {
  const firstIndexByKey = new Map<string, number>();
  request.entries.forEach((entry, index) => {
    // In code points, as the published `maxLength` counts.
    if ([...entry.id].length > MAX_ENTRY_ID_LENGTH) {
      addError(errors, `entries[${index}].id`, `entry id must be at most ${MAX_ENTRY_ID_LENGTH} characters`);
    }
    const key = entryKey(entry.id);
    const first = firstIndexByKey.get(key);
    if (first === undefined) firstIndexByKey.set(key, index);
    else {
      addError(
        errors,
        `entries[${index}].id`,
        `duplicate entry id '${entry.id}': entry ids are unique within a request, compared case-insensitively (first at entries[${first}].id)`,
      );
    }
  });
}

/** Every value of every well-formed property ID, grouped by canonical ID in order of first appearance. */
function collectObservations(request: ParsedIngestRequest, errors: IngestErrors): Map<string, Observation[]> {
  const byProperty = new Map<string, Observation[]>();
  request.entries.forEach((entry, entryIndex) => {
    entry.properties.forEach((property, propertyIndex) => {
      const base = `entries[${entryIndex}].properties[${propertyIndex}]`;
      const idProblem = propertyIdProblem(property.id);
      if (idProblem !== undefined) {
        addError(errors, `${base}.id`, idProblem);
        return;
      }
      if (property.language != null) {
        const problem = languageProblem(property.language);
        if (problem !== undefined) addError(errors, `${base}.language`, problem);
      }
      const id = canonicalPropertyId(property.id);
      const list = byProperty.get(id) ?? [];
      list.push({ valuePath: `${base}.value`, value: property.value, hasLanguage: property.language != null });
      byProperty.set(id, list);
    });
  });
  return byProperty;
}

interface ResolvedType {
  type: PropertyDataType;
  delimiter: string | null;
  inferred: boolean;
}

/** Configured types win; properties without one are inferred (spec rules 7, 8 and 10). */
function resolveTypes(
  observations: Map<string, Observation[]>,
  config: Map<string, ConfiguredProperty>,
  errors: IngestErrors,
): { types: Map<string, ResolvedType>; newPropertiesFound: NewPropertyFound[] } {
  const types = new Map<string, ResolvedType>();
  const newPropertiesFound: NewPropertyFound[] = [];
  for (const [id, values] of observations) {
    const configuredProperty = config.get(id);
    if (configuredProperty !== undefined && configuredProperty.type !== null) {
      const delimiter = isListType(configuredProperty.type) || configuredProperty.type === 'Wildcard' ? configuredProperty.delimiter : null;
      types.set(id, { type: configuredProperty.type, delimiter, inferred: false });
      continue;
    }
    const inferred = inferPropertyType(id, values, errors);
    if (inferred === undefined) continue;
    if (isListType(inferred)) {
      // Spec rule 8: a new list property uses `,`; one that exists untyped keeps its delimiter.
      const delimiter = configuredProperty?.delimiter || DEFAULT_LIST_DELIMITER;
      types.set(id, { type: inferred, delimiter, inferred: true });
      newPropertiesFound.push({ id, type: inferred, delimiter });
    } else {
      types.set(id, { type: inferred, delimiter: null, inferred: true });
      newPropertiesFound.push({ id, type: inferred });
    }
  }
  return { types, newPropertiesFound };
}

function planEntries(request: ParsedIngestRequest, types: Map<string, ResolvedType>, ceilings: IngestLimits, errors: IngestErrors): PlannedEntry[] {
  return request.entries.map((entry, entryIndex) => {
    const seen = new Map<string, number>();
    const properties: PlannedProperty[] = [];
    entry.properties.forEach((property, propertyIndex) => {
      const base = `entries[${entryIndex}].properties[${propertyIndex}]`;
      const id = canonicalPropertyId(property.id);
      const resolved = types.get(id);
      if (resolved === undefined) return; // its id or its inference failed; already reported
      const language = property.language == null ? null : canonicalLanguage(property.language);

      // Spec: a property may repeat inside an entry only when `language` differs.
      const repeatKey = `${id}\u0000${language ?? ''}`;
      const firstIndex = seen.get(repeatKey);
      if (firstIndex !== undefined) {
        addError(
          errors,
          language === null ? `${base}.id` : `${base}.language`,
          `property '${id}' repeats in this entry ${language === null ? 'without a language' : `with the same language '${language}'`} (first at entries[${entryIndex}].properties[${firstIndex}]); a property may repeat only with a differing language`,
        );
        return;
      }
      seen.set(repeatKey, propertyIndex);

      // Spec rule 5: language is required for localized types and rejected for the others.
      const how = resolved.inferred ? ' (type inferred from this request)' : '';
      if (isLocalizedType(resolved.type) && language === null) {
        addError(errors, `${base}.language`, `language is required for ${resolved.type} property '${id}'${how}`);
        return;
      }
      if (!isLocalizedType(resolved.type) && language !== null) {
        addError(
          errors,
          `${base}.language`,
          `language is not allowed for ${resolved.type} property '${id}'${how}: only LocalizedText and LocalizedList take a language`,
        );
        return;
      }

      const problem = valueProblem(property.value, resolved.type, resolved.delimiter);
      if (problem !== undefined) {
        addError(errors, `${base}.value`, problem);
        return;
      }
      const atRest = serializeAtRest(property.value, resolved.delimiter);
      const valueBytes = Buffer.byteLength(atRest, 'utf8');
      if (valueBytes > ceilings.maxPropertyValueBytes) {
        addError(errors, `${base}.value`, `value is ${valueBytes} bytes, above the ceiling of ${ceilings.maxPropertyValueBytes} bytes (maxPropertyValueBytes)`);
        return;
      }
      properties.push({
        id,
        language,
        type: resolved.type,
        delimiter: resolved.delimiter,
        value: property.value,
        atRest,
        cleared: property.value === null,
      });
    });
    return { id: entry.id, properties };
  });
}

function checkEntrySizes(body: unknown, ceilings: IngestLimits, errors: IngestErrors): void {
  const entries = (body as { entries: unknown[] }).entries;
  entries.forEach((entry, index) => {
    const bytes = jsonBytes(entry);
    if (bytes > ceilings.maxEntrySizeBytes) {
      addError(errors, `entries[${index}]`, `entry is ${bytes} bytes, above the ceiling of ${ceilings.maxEntrySizeBytes} bytes (maxEntrySizeBytes)`);
    }
  });
}

/** UTF-8 bytes of the JSON form; big integers count as their digits (plus two quote bytes). */
function jsonBytes(value: unknown): number {
  const text = JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
  return text === undefined ? 0 : Buffer.byteLength(text, 'utf8');
}

function lowercaseKeys(configured: ConfiguredProperties): Map<string, ConfiguredProperty> {
  const out = new Map<string, ConfiguredProperty>();
  for (const [id, property] of configured) out.set(canonicalPropertyId(id), property);
  return out;
}

function definedOnly(limits: Partial<IngestLimits> | undefined): Partial<IngestLimits> {
  const out: Partial<IngestLimits> = {};
  if (!limits) return out;
  for (const key of Object.keys(limits) as (keyof IngestLimits)[]) {
    const value = limits[key];
    if (typeof value === 'number' && Number.isFinite(value)) out[key] = value;
  }
  return out;
}
