import { DEFAULT_LIST_DELIMITER, entryKey, type ConfiguredProperty, type PlannedEntry } from '../../ingest/index.js';
import type { NewPropertyFound, PropertyDataType, Source, SourceProperty, SourcePropertyState } from '../../types.js';

/**
 * In-memory state of the sources of every tenant. Entries are kept at rest as strings per
 * (property, language), the way the spec describes the platform (rule 2: values are serialized to
 * the source's string-at-rest form), and typed only when read.
 */

export interface PropertyRecord {
  /** Lowercase (spec rule 9). */
  id: string;
  displayName: string;
  description: string;
  /** null until a PUT sets one or an ingest infers one. */
  type: PropertyDataType | null;
  /** Always set (the spec's source property shows `delimiter: string`); used by list types. */
  delimiter: string;
  state: SourcePropertyState;
}

export interface StoredValue {
  language: string | null;
  atRest: string;
}

export interface StoredProperty {
  /** Spec: "All translations of one property share the same stored timestamp". */
  lastUpdated: string;
  /** By language (`''` for none), in insertion order. */
  values: Map<string, StoredValue>;
}

export interface EntryRecord {
  /** Spelling of the first ingest; entries are keyed case-insensitively like the ingest's uniqueness rule. */
  id: string;
  lastUpdated: string;
  properties: Map<string, StoredProperty>;
}

export interface SourceRecord {
  source: Source;
  properties: Map<string, PropertyRecord>;
  entries: Map<string, EntryRecord>;
  /** Types inferred by accepted but not yet applied batches, so a later batch validates against them. */
  pending: Map<string, ConfiguredProperty>;
}

export function nowIso(): string {
  return new Date().toISOString();
}

export class SourceStore {
  private readonly tenants = new Map<string, Map<string, SourceRecord>>();

  get(tenant: string, sourceId: string): SourceRecord | undefined {
    return this.tenants.get(tenant)?.get(sourceId);
  }

  /** Source IDs are compared exactly: the spec shows no case rule for them. */
  create(tenant: string, sourceId: string, init: { name?: string; description?: string } = {}): SourceRecord {
    const existing = this.get(tenant, sourceId);
    if (existing) return existing;
    const now = nowIso();
    const record: SourceRecord = {
      // Spec: status `Active` and type `Generic` are the values shown; the name defaults to the ID.
      source: {
        id: sourceId,
        name: init.name ?? sourceId,
        description: init.description ?? '',
        status: 'Active',
        type: 'Generic',
        createdAt: now,
        updatedAt: now,
      },
      properties: new Map(),
      entries: new Map(),
      pending: new Map(),
    };
    let sources = this.tenants.get(tenant);
    if (!sources) this.tenants.set(tenant, (sources = new Map()));
    sources.set(sourceId, record);
    return record;
  }

  list(tenant: string): SourceRecord[] {
    return [...(this.tenants.get(tenant)?.values() ?? [])];
  }
}

/** The configuration an ingest validates against: registered types, then types pending registration. */
export function configuredProperties(record: SourceRecord): Map<string, ConfiguredProperty> {
  const out = new Map<string, ConfiguredProperty>();
  for (const property of record.properties.values()) out.set(property.id, { type: property.type, delimiter: property.delimiter });
  for (const [id, pending] of record.pending) {
    if (out.get(id)?.type == null) out.set(id, pending);
  }
  return out;
}

export function newPropertyRecord(id: string, type: PropertyDataType | null, delimiter?: string | null): PropertyRecord {
  return { id, displayName: id, description: '', type, delimiter: delimiter || DEFAULT_LIST_DELIMITER, state: 'Active' };
}

/**
 * Spec rule 10: properties inferred by a batch are registered when it is applied. A property that
 * got a type meanwhile (PUT, or an earlier batch) keeps it.
 */
export function registerInferred(record: SourceRecord, found: readonly NewPropertyFound[]): void {
  for (const property of found) {
    record.pending.delete(property.id);
    const existing = record.properties.get(property.id);
    if (!existing) {
      record.properties.set(property.id, newPropertyRecord(property.id, property.type, property.delimiter));
    } else if (existing.type === null) {
      existing.type = property.type;
      if (property.delimiter) existing.delimiter = property.delimiter;
    }
  }
}

/** Spec rule 1: every entry is an upsert; properties not in the batch keep their values. Returns the record. */
export function upsertEntry(record: SourceRecord, planned: PlannedEntry, now: string): EntryRecord {
  const key = entryKey(planned.id);
  let entry = record.entries.get(key);
  if (!entry) {
    entry = { id: planned.id, lastUpdated: now, properties: new Map() };
    record.entries.set(key, entry);
  }
  for (const property of planned.properties) {
    let stored = entry.properties.get(property.id);
    if (!stored) entry.properties.set(property.id, (stored = { lastUpdated: now, values: new Map() }));
    stored.values.set(property.language ?? '', { language: property.language, atRest: property.atRest });
    stored.lastUpdated = now;
  }
  entry.lastUpdated = now;
  return entry;
}

export function toSourceProperty(property: PropertyRecord): SourceProperty {
  return { ...property };
}
