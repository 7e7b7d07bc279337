import type { ErrorBag } from '../../tags/seeding.js';
import { resolveProperty } from './filter.js';
import type { DestinationQuery } from './params.js';
import type { EndpointSchema, ExposedProperty, Row } from './schema.js';
import { compareComparable, comparablesOf, parseQueryValue, type Comparable } from './values.js';

/** Spec: "Without parameters the first 50 results are returned". */
export const DEFAULT_TOP = 50;

interface ResolvedSort {
  property: ExposedProperty;
  descending: boolean;
}

export interface Ordering {
  sort(rows: Row[]): Row[];
  /** Rows strictly after the `after` values (spec: "Entries after the given value of the sort property"). */
  after(rows: Row[]): Row[];
}

export function compileOrdering(query: DestinationQuery, schema: EndpointSchema, bag: ErrorBag): Ordering {
  const keys: ResolvedSort[] = [];
  for (const s of query.sort) {
    const property = resolveProperty(schema, s.name);
    if (property) keys.push({ property, descending: s.descending });
    else bag.add(s.path, `Unknown property ${s.name} on this endpoint.`);
  }
  const afterValues: Comparable[] = [];
  (query.after ?? []).forEach((raw, i) => {
    const key = keys[i];
    if (!key) return;
    const parsed = parseQueryValue(raw, key.property.type);
    if (typeof parsed === 'object') bag.add(query.after!.length > 1 ? `after[${i}]` : 'after', parsed.error);
    else afterValues.push(parsed);
  });
  const sortValue = (row: Row, p: ExposedProperty): Comparable | undefined => comparablesOf(row.values.get(p.propertyId), p.type)[0];
  const compareOn = (a: Comparable | undefined, b: Comparable | undefined, descending: boolean): number => {
    // Missing values sort last in either direction.
    if (a === undefined || b === undefined) return a === b ? 0 : a === undefined ? 1 : -1;
    const cmp = compareComparable(a, b);
    return descending ? -cmp : cmp;
  };
  return {
    sort(rows) {
      if (keys.length === 0) return rows;
      return [...rows].sort((a, b) => {
        for (const key of keys) {
          const cmp = compareOn(sortValue(a, key.property), sortValue(b, key.property), key.descending);
          if (cmp !== 0) return cmp;
        }
        // Stable ties: the source order, then the language order (rows are built in that order).
        return a.ordinal - b.ordinal;
      });
    },
    after(rows) {
      if (afterValues.length === 0) return rows;
      return rows.filter((row) => {
        for (let i = 0; i < afterValues.length; i++) {
          const key = keys[i]!;
          const cmp = compareOn(sortValue(row, key.property), afterValues[i], key.descending);
          if (cmp !== 0) return cmp > 0;
        }
        return false;
      });
    },
  };
}

/** `skip` then `top` (default 50); `top` plus `skip` never reaches past the 10,000-entry window (checked in params). */
export function page(rows: Row[], query: DestinationQuery): Row[] {
  const top = query.top ?? DEFAULT_TOP;
  return rows.slice(query.skip, query.skip + top);
}
