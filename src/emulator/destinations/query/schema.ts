import type { ReadValue } from '../../../ingest/index.js';
import type { PropertyDataType } from '../../../types.js';
import type { ReadEntry } from '../../sources/read-shape.js';
import type { EndpointConfig, EndpointProperty } from '../registry.js';
import { queryTypeOf, type QueryValueType } from './values.js';

/** A property as a query sees it: its exposed name, its source property and its value type. */
export interface ExposedProperty {
  /** Name in results, `select`, sorts, filters and search (the alias when configured). */
  name: string;
  /** Source property ID; `id` is the entry ID itself. */
  propertyId: string;
  type: QueryValueType;
  /** List properties hold several values (criteria match ANY of them, or ALL with `match: All`). */
  multiValued: boolean;
  localized: boolean;
}

export interface EndpointSchema {
  /** In result order: `id` first, then configured order (or first-seen order when every property is exposed). */
  properties: ExposedProperty[];
  byName: Map<string, ExposedProperty>;
}

interface SeenProperty {
  type: PropertyDataType | null;
  localized: boolean;
}

/** The source's properties with their current configured type, as the read shape reports them. */
export function sourceProperties(entries: readonly ReadEntry[]): Map<string, SeenProperty> {
  const seen = new Map<string, SeenProperty>();
  for (const entry of entries) {
    for (const item of entry.properties) {
      const known = seen.get(item.id);
      if (!known) seen.set(item.id, { type: item.type, localized: item.language !== null });
      else {
        known.type ??= item.type;
        known.localized ||= item.language !== null;
      }
    }
  }
  return seen;
}

const ID_PROPERTY: ExposedProperty = { name: 'id', propertyId: 'id', type: 'String', multiValued: false, localized: false };

export function endpointSchema(endpoint: EndpointConfig, entries: readonly ReadEntry[]): EndpointSchema {
  const seen = sourceProperties(entries);
  const exposed: EndpointProperty[] = endpoint.properties ?? [...seen.keys()].map((id) => ({ id }));
  const properties: ExposedProperty[] = [ID_PROPERTY];
  for (const p of exposed) {
    if (p.id === 'id') continue;
    properties.push(describe(p.id, p.alias ?? p.id, seen.get(p.id)));
  }
  return { properties, byName: new Map(properties.map((p) => [p.name, p])) };
}

/** A facet may count a source property that is not exposed, so it is described from the source. */
export function describeSourceProperty(propertyId: string, entries: readonly ReadEntry[]): ExposedProperty {
  return propertyId === 'id' ? ID_PROPERTY : describe(propertyId, propertyId, sourceProperties(entries).get(propertyId));
}

function describe(propertyId: string, name: string, seen: SeenProperty | undefined): ExposedProperty {
  const type = seen?.type ?? null;
  return {
    name,
    propertyId,
    type: queryTypeOf(type),
    multiValued: type === 'List' || type === 'LocalizedList',
    localized: seen?.localized ?? false,
  };
}

/** One result candidate: an entry in one language (spec: `language=all` returns one entry per language). */
export interface Row {
  id: string;
  language: string;
  lastUpdated: string;
  /** Source property ID -> value in this row's language (`id` included). */
  values: Map<string, ReadValue>;
  /** Position in the source order, the last sort tie-breaker. */
  ordinal: number;
}

export function rowsOf(entries: readonly ReadEntry[], languages: readonly string[]): Row[] {
  const rows: Row[] = [];
  let ordinal = 0;
  for (const entry of entries) {
    for (const language of languages) {
      const values = new Map<string, ReadValue>([['id', entry.id]]);
      for (const item of entry.properties) {
        if (item.language === null) values.set(item.id, item.value);
        else if (item.language.toLowerCase() === language.toLowerCase()) values.set(item.id, item.value);
        else if (!values.has(item.id)) values.set(item.id, null);
      }
      rows.push({ id: entry.id, language, lastUpdated: entry.lastUpdated, values, ordinal: ordinal++ });
    }
  }
  return rows;
}
