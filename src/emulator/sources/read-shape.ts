import { decodeAtRest, isListType, type ReadValue } from '../../ingest/index.js';
import type { PropertyItem, SourceEntry } from '../../types.js';
import type { EntryRecord, PropertyRecord } from './store.js';

/** A stored value the current property type cannot represent (spec: reads answer 409). */
export class IncompatibleValueError extends Error {
  constructor(
    readonly entryId: string,
    readonly propertyId: string,
    readonly language: string | null,
    reason: string,
  ) {
    super(`entry '${entryId}', property '${propertyId}'${language === null ? '' : ` (language ${language})`}: ${reason}`);
    this.name = 'IncompatibleValueError';
  }
}

/** A property item as the emulator writes it: an Integer beyond 2^53 is a `bigint` (exact on the wire). */
export type ReadItem = Omit<PropertyItem, 'value'> & { value: ReadValue };
/** A source entry as the emulator writes it (see ReadItem); clients parse it as a SourceEntry. */
export type ReadEntry = Omit<SourceEntry, 'properties'> & { properties: ReadItem[] };

/**
 * The entry in its read shape, typed by the CURRENT property configuration (spec, Read source
 * entries). `strict` throws IncompatibleValueError for a value the current type cannot represent
 * (the reads' 409); otherwise (events) such a value is shown as its raw string with `type: null`,
 * so an event never fails to be written.
 */
export function entryReadShape(entry: EntryRecord, properties: ReadonlyMap<string, PropertyRecord>, strict: boolean): ReadEntry {
  const items: ReadItem[] = [];
  for (const [propertyId, stored] of entry.properties) {
    const config = properties.get(propertyId);
    const type = config?.type ?? null;
    const delimiter = type !== null && isListType(type) ? (config?.delimiter ?? null) : null;
    for (const value of stored.values.values()) {
      const decoded = decodeAtRest(value.atRest, type, delimiter, value.language);
      if (decoded.ok) {
        items.push({ id: propertyId, value: decoded.value, type, delimiter, lastUpdated: stored.lastUpdated, language: value.language });
      } else if (strict) {
        throw new IncompatibleValueError(entry.id, propertyId, value.language, decoded.reason);
      } else {
        items.push({ id: propertyId, value: value.atRest, type: null, delimiter: null, lastUpdated: stored.lastUpdated, language: value.language });
      }
    }
  }
  return { id: entry.id, properties: items, lastUpdated: entry.lastUpdated };
}
