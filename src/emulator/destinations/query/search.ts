import type { ErrorBag } from '../../tags/seeding.js';
import { resolveProperty, type RowPredicate } from './filter.js';
import type { DestinationQuery } from './params.js';
import type { EndpointSchema, ExposedProperty } from './schema.js';

/**
 * Spec `search`: phrases combined with AND; a phrase matches an entire value (not a word inside
 * it) unless `*` wildcards say otherwise — `*v` ends with, `v*` begins with, `*v*` contains (a `*`
 * elsewhere matches any run of characters too). Case sensitive unless `caseInsensitiveSearch`.
 * A phrase matches a row when it matches any value of any searched property (a list: any element).
 */
export function compileSearch(query: DestinationQuery, schema: EndpointSchema, bag: ErrorBag): RowPredicate {
  if (query.search.length === 0) return () => true;
  let targets: ExposedProperty[];
  if (query.searchOn) {
    targets = [];
    query.searchOn.forEach((name, i) => {
      const p = resolveProperty(schema, name);
      if (p) targets.push(p);
      else bag.add(`searchOn[${i}]`, `Unknown property ${name} on this endpoint.`);
    });
  } else {
    // Without searchOn, every exposed text property is searched (our choice; the spec does not say).
    targets = schema.properties.filter((p) => p.type === 'String');
  }
  const patterns = query.search.map((phrase) => globToRegExp(phrase, query.caseInsensitiveSearch));
  return (row) =>
    patterns.every((pattern) =>
      targets.some((p) => {
        const value = row.values.get(p.propertyId);
        if (value === null || value === undefined) return false;
        const items = Array.isArray(value) ? value : [value];
        return items.some((item) => pattern.test(String(item)));
      }),
    );
}

export function globToRegExp(phrase: string, caseInsensitive: boolean): RegExp {
  const body = phrase
    .split('*')
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${body}$`, caseInsensitive ? 'isu' : 'su');
}
