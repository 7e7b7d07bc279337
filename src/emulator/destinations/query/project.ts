import type { ReadValue } from '../../../ingest/index.js';
import type { ErrorBag } from '../../tags/seeding.js';
import { resolveProperty } from './filter.js';
import type { DestinationQuery } from './params.js';
import type { EndpointSchema, ExposedProperty, Row } from './schema.js';

export type Result = Record<string, unknown>;

export interface Projection {
  project(row: Row): Result;
}

/**
 * Spec `select`: only these properties, by exposed name; omitted = every configured property.
 * `listIds`: only IDs. `select` is taken to the letter ("Return only these properties"): `id` is
 * in a result only when selected (or with `includeMeta`, as `@meta.@id`).
 * `includeMeta`: `@meta` with `@timestamp`, `@id`, `@type` (the endpoint name, our choice), `@language`.
 */
export function compileProjection(query: DestinationQuery, schema: EndpointSchema, endpointName: string, bag: ErrorBag): Projection {
  let fields: ExposedProperty[] = schema.properties;
  if (query.listIds) fields = schema.properties.filter((p) => p.name === 'id');
  else if (query.select) {
    const chosen = new Set<ExposedProperty>();
    query.select.forEach((name, i) => {
      // Select uses the exposed names only (spec: "names are the exposed names (alias if configured)").
      const p = schema.byName.get(name);
      if (p) chosen.add(p);
      else bag.add(`select[${i}]`, resolveProperty(schema, name) ? `${name} is exposed under its alias.` : `Unknown property ${name} on this endpoint.`);
    });
    fields = schema.properties.filter((p) => chosen.has(p));
  }
  return {
    project(row) {
      const result: Result = {};
      for (const p of fields) result[p.name] = valueOf(row.values.get(p.propertyId), p);
      if (query.includeMeta) {
        result['@meta'] = { '@timestamp': row.lastUpdated, '@id': row.id, '@type': endpointName, '@language': row.language };
      }
      return result;
    },
  };
}

function valueOf(value: ReadValue | undefined, p: ExposedProperty): ReadValue {
  if (value === undefined) return p.multiValued ? [] : null;
  return value;
}
