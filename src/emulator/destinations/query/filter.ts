import { ErrorBag } from '../../tags/seeding.js';
import type { Criterion, DestinationQuery, FilterQuery } from './params.js';
import type { EndpointSchema, ExposedProperty, Row } from './schema.js';
import { compareComparable, comparablesOf, isRangeType, parseQueryValue, type Comparable } from './values.js';

export type RowPredicate = (row: Row) => boolean;

/**
 * Resolves a property name of a query: the exposed name first (alias when configured), then the
 * source property ID of an exposed property (spec: "each an object mapping a property ID to criteria").
 */
export function resolveProperty(schema: EndpointSchema, name: string): ExposedProperty | undefined {
  return schema.byName.get(name) ?? schema.properties.find((p) => p.propertyId === name.toLowerCase());
}

/** Compiles `filter` (OR of queries, each AND of must / not must_not) into one predicate; 400 problems go to `bag`. */
export function compileFilter(query: DestinationQuery, schema: EndpointSchema, bag: ErrorBag): RowPredicate {
  const compiled = query.filter.map((f) => compileQuery(f, schema, bag));
  // Spec: Filtering rule 2 — "The filter may be empty": no query means no restriction.
  if (compiled.length === 0) return () => true;
  return (row) => compiled.some((p) => p(row));
}

function compileQuery(f: FilterQuery, schema: EndpointSchema, bag: ErrorBag): RowPredicate {
  const must = f.must.map((c) => compileCriterion(c, schema, bag));
  const mustNot = f.mustNot.map((c) => compileCriterion(c, schema, bag));
  return (row) => must.every((p) => p(row)) && !mustNot.some((p) => p(row));
}

function compileCriterion(c: Criterion, schema: EndpointSchema, bag: ErrorBag): RowPredicate {
  const property = resolveProperty(schema, c.name);
  if (!property) {
    bag.add(c.path, `Unknown property ${c.name} on this endpoint.`);
    return () => false;
  }
  const values: Comparable[] = [];
  c.values.forEach((raw, i) => {
    const parsed = parseQueryValue(raw, property.type);
    if (typeof parsed === 'object') bag.add(`${c.path}.values[${i}]`, parsed.error);
    else values.push(parsed);
  });
  const { type } = property;
  if (c.operator !== 'Equal' && !isRangeType(type)) {
    // Spec: Filtering rule 3 — range operators apply to DateTime, Integer and Double properties.
    bag.add(`${c.path}.operator`, `${c.operator} applies to DateTime, Integer and Double properties; ${c.name} is ${type}.`);
    return () => false;
  }
  const read = (row: Row) => comparablesOf(row.values.get(property.propertyId), type);
  if (c.operator === 'Between' || c.operator === 'BetweenInclusive') {
    if (c.values.length !== 2) {
      bag.add(`${c.path}.values`, `${c.operator} takes exactly two values.`);
      return () => false;
    }
    const [low, high] = values as [Comparable, Comparable];
    const inclusive = c.operator === 'BetweenInclusive';
    return (row) =>
      read(row).some((e) => {
        const lo = compareComparable(e, low);
        const hi = compareComparable(e, high);
        return inclusive ? lo >= 0 && hi <= 0 : lo > 0 && hi < 0;
      });
  }
  const test = elementTest(c.operator);
  return (row) => {
    const elements = read(row);
    const holds = (v: Comparable) => elements.some((e) => test(compareComparable(e, v)));
    // Spec: `match: All` requires every value to be present (default ANY).
    return c.match === 'All' ? values.every(holds) : values.some(holds);
  };
}

function elementTest(operator: Criterion['operator']): (cmp: number) => boolean {
  switch (operator) {
    case 'GreaterThan':
      return (cmp) => cmp > 0;
    case 'GreaterThanOrEqual':
      return (cmp) => cmp >= 0;
    case 'LessThan':
      return (cmp) => cmp < 0;
    case 'LessThanOrEqual':
      return (cmp) => cmp <= 0;
    default:
      return (cmp) => cmp === 0;
  }
}

/** Spec: periodSince = modified after, periodBefore = modified before, compared in UTC; combinable. */
export function compilePeriod(query: DestinationQuery): RowPredicate {
  const { periodSince, periodBefore } = query;
  if (!periodSince && !periodBefore) return () => true;
  return (row) => {
    const [at] = comparablesOf(row.lastUpdated, 'DateTime');
    if (at === undefined) return false;
    if (periodSince && !(at > periodSince)) return false;
    if (periodBefore && !(at < periodBefore)) return false;
    return true;
  };
}
