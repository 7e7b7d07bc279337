import { randomUUID } from 'node:crypto';
import type { EventFor } from '../handlers/define.js';
import type { CloudEvent, PropertyDataType, PropertyItem, PropertyValue, SourceEntry, SourceEntryUpdatedData } from '../types.js';

let nextSequence = 1;

/** What a property value would be typed as at ingest (the emulator infers the same way). */
function inferType(value: PropertyValue): PropertyDataType | null {
  if (value === null) return null;
  if (Array.isArray(value)) return 'List';
  if (typeof value === 'boolean') return 'Boolean';
  if (typeof value === 'number') return Number.isInteger(value) ? 'Integer' : 'Decimal';
  return 'Text';
}

/**
 * An entry in the read shape the platform delivers (`PropertyItem` with every field present), from
 * plain values: `sourceEntry('p-1', { name: 'Kettle', price: 12.5 })`.
 */
export function sourceEntry(id: string, values: Record<string, PropertyValue>, lastUpdated: string = new Date(0).toISOString()): SourceEntry {
  const properties: PropertyItem[] = Object.entries(values).map(([propertyId, value]) => ({
    id: propertyId,
    value,
    type: inferType(value),
    delimiter: Array.isArray(value) ? ',' : null,
    lastUpdated,
    language: null,
  }));
  return { id, properties, lastUpdated };
}

/** `source_entry.updated` data: the entry before (null when new) and after an ingest. */
export function entryUpdatedData(options: { sourceId?: string; previous?: SourceEntry | null; current: SourceEntry }): SourceEntryUpdatedData {
  return { sourceId: options.sourceId ?? 'test-source', entryId: options.current.id, previous: options.previous ?? null, current: options.current };
}

/** Default data of known types, so `createTestEvent('source_entry.updated')` is already realistic. */
function defaultData(type: string): unknown {
  if (type === 'source_entry.updated') return entryUpdatedData({ current: sourceEntry('entry-1', { name: 'Example' }) });
  return {};
}

/**
 * A CloudEvent as a durable consumer delivers it: unique `id`, increasing `sequence` (a decimal
 * string), `subject` = the entry id for entry events. `overrides` replaces any envelope field.
 */
export function createTestEvent<const T extends string>(
  type: T,
  data?: EventFor<T>['data'],
  overrides: Partial<Omit<CloudEvent, 'type' | 'data'>> = {},
): EventFor<T> {
  const payload = data === undefined ? defaultData(type) : data;
  const entryId = (payload as { entryId?: unknown } | null)?.entryId;
  const event: CloudEvent = {
    specversion: '1.0',
    id: randomUUID(),
    type,
    subject: typeof entryId === 'string' ? entryId : 'test-subject',
    sequence: String(nextSequence++),
    source: '/tenants/test-tenant',
    time: new Date().toISOString(),
    datacontenttype: 'application/json',
    data: payload,
    ...overrides,
  };
  return event as EventFor<T>;
}
