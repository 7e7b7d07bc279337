import type { QueryValue } from '../transport.js';

/**
 * Parameters of the destination query API (spec: Destination query API), typed once for both
 * forms. `toGetQuery` and `toPostBody` produce the wire forms the spec shows; every parameter is
 * optional and, without any, the first 50 results come back.
 */

/** A filter value (spec, Filtering 4: String, Datetime, Integer, Double, Bool; always passed in arrays). */
export type FilterValue = string | number | boolean | Date;

/** Spec, Filtering 3: `Equal` or a range operator (range operators apply to DateTime, Integer, Double). */
export type FilterOperator = 'Equal' | 'GreaterThan' | 'GreaterThanOrEqual' | 'LessThan' | 'LessThanOrEqual' | 'Between' | 'BetweenInclusive';

/**
 * Criteria on one property: an array of values (exact match against ANY), or an operator with its
 * values; `Between` (exclusive) and `BetweenInclusive` take two values; `match: 'All'` requires
 * every value in a multi-valued property.
 */
export type FilterCriteria = readonly FilterValue[] | { operator?: FilterOperator; values: readonly FilterValue[]; match?: 'Any' | 'All' };

/** One query of a POST `filter`: every `must` criterion holds and no `must_not` criterion holds. */
export interface FilterQuery {
  must?: Record<string, FilterCriteria>;
  must_not?: Record<string, FilterCriteria>;
}

/** Parameters both forms share. */
export interface DestinationQueryBase {
  /** Entries by ID. */
  id?: readonly string[];
  /** Return only these properties (exposed names: the alias when configured). */
  select?: readonly string[];
  /** Return only IDs. */
  listIds?: boolean;
  /** Add `total` (slows requests as entries grow). */
  includeTotals?: boolean;
  /** Add `@meta` to every result. */
  includeMeta?: boolean;
  /** Entries to return (default 50). `top + skip` is capped at 10,000: use `after` beyond. */
  top?: number;
  skip?: number;
  /** Entries after these values of the sort properties (needs `sortAsc` or `sortDesc`). */
  after?: string | readonly string[];
  /** Ascending sort properties, in priority order (sent before `sortDesc`). */
  sortAsc?: readonly string[];
  sortDesc?: readonly string[];
  /** A language of the destination, or `all` for one result per language. */
  language?: string;
  /** Phrases, AND-ed; `*` is a wildcard (`*v`, `v*`, `*v*`). */
  search?: readonly string[];
  searchOn?: readonly string[];
  caseInsensitiveSearch?: boolean;
  /** Entries modified after / before this time (a Date, or a string in the spec's datetime format). */
  periodSince?: string | Date;
  periodBefore?: string | Date;
}

/** GET form: `equals` holds the equality filters (AND across properties, OR within one). */
export interface DestinationGetQuery extends DestinationQueryBase {
  equals?: Record<string, FilterValue | readonly FilterValue[]>;
}

/** POST form: `filter` is an array of queries, any one of which may match (OR). */
export interface DestinationPostQuery extends DestinationQueryBase {
  filter?: readonly FilterQuery[];
}

/** Spec: Destination query response; `R` is the result shape of the endpoint. */
export interface DestinationQueryResponse<R = DestinationResult> {
  language: string;
  /** Present only with `includeTotals`. */
  total?: number;
  results: R[];
  /** Present only when facets are configured on the endpoint. */
  facets?: DestinationFacet[];
}

export interface DestinationFacet {
  propertyId: string;
  header: string;
  values: Array<{ count: number; key: string }>;
}

/** Spec: with `includeMeta` each result carries `@meta`. */
export interface DestinationResultMeta {
  '@timestamp': string;
  '@id': string;
  '@type': string;
  '@language': string;
}

/** A result with unknown properties (the shape differs per endpoint). */
export type DestinationResult = Record<string, unknown> & { '@meta'?: DestinationResultMeta };

const GET_RESERVED = new Set([
  'id',
  'select',
  'listIds',
  'includeTotals',
  'includeMeta',
  'top',
  'skip',
  'after',
  'sortAsc',
  'sortDesc',
  'language',
  'search',
  'searchOn',
  'caseInsensitiveSearch',
  'periodSince',
  'periodBefore',
]);

/** Spec datetime format `yyyy-MM-dd'T'HH:mm:ss.SSSSSSSZ` (seven fraction digits, UTC). */
export function formatDestinationDateTime(date: Date): string {
  if (Number.isNaN(date.getTime())) throw new RangeError('invalid Date in a destination query');
  return `${date.toISOString().slice(0, 23)}0000Z`;
}

function filterValue(value: FilterValue): string | number | boolean {
  return value instanceof Date ? formatDestinationDateTime(value) : value;
}

function dateParam(value: string | Date | undefined): string | undefined {
  return value instanceof Date ? formatDestinationDateTime(value) : value;
}

function checkPaging(query: DestinationQueryBase): void {
  for (const key of ['top', 'skip'] as const) {
    const value = query[key];
    if (value !== undefined && (!Number.isInteger(value) || value < 0)) throw new RangeError(`${key} must be a non-negative integer (got ${value})`);
  }
  // Spec, Limits: the top plus skip window is 10,000 entries.
  if ((query.top ?? 0) + (query.skip ?? 0) > 10_000) throw new RangeError('top plus skip must stay within 10,000 entries; use after with a sort beyond it');
}

/** The GET query string (arrays as repeated parameters). */
export function toGetQuery(query: DestinationGetQuery): Record<string, QueryValue> {
  checkPaging(query);
  const out: Record<string, QueryValue> = {
    id: query.id,
    select: query.select,
    listIds: query.listIds,
    includeTotals: query.includeTotals,
    includeMeta: query.includeMeta,
    top: query.top,
    skip: query.skip,
    after: typeof query.after === 'string' ? [query.after] : query.after,
    sortAsc: query.sortAsc,
    sortDesc: query.sortDesc,
    language: query.language,
    search: query.search,
    searchOn: query.searchOn,
    caseInsensitiveSearch: query.caseInsensitiveSearch,
    periodSince: dateParam(query.periodSince),
    periodBefore: dateParam(query.periodBefore),
  };
  for (const [property, raw] of Object.entries(query.equals ?? {})) {
    // A filter on a property named like a parameter would be read as that parameter.
    if (GET_RESERVED.has(property)) throw new TypeError(`equals.${property}: ${property} is a query parameter name; filter it with the POST form`);
    const values = (Array.isArray(raw) ? raw : [raw]) as readonly FilterValue[];
    out[property] = values.map((value) => String(filterValue(value)));
  }
  return out;
}

/** The POST body (spec: `period.since` / `period.before`, `after` a string, `filter` queries). */
export function toPostBody(query: DestinationPostQuery): Record<string, unknown> {
  checkPaging(query);
  const body: Record<string, unknown> = {};
  const set = (key: string, value: unknown): void => {
    if (value !== undefined) body[key] = value;
  };
  set('id', query.id);
  set('select', query.select);
  set('listIds', query.listIds);
  set('includeTotals', query.includeTotals);
  set('includeMeta', query.includeMeta);
  set('top', query.top);
  set('skip', query.skip);
  set('after', query.after);
  // Key order is sort priority in a JSON body: ascending keys first, as documented on sortAsc.
  set('sortAsc', query.sortAsc);
  set('sortDesc', query.sortDesc);
  set('language', query.language);
  set('search', query.search);
  set('searchOn', query.searchOn);
  set('caseInsensitiveSearch', query.caseInsensitiveSearch);
  const since = dateParam(query.periodSince);
  const before = dateParam(query.periodBefore);
  if (since !== undefined || before !== undefined) body.period = { ...(since ? { since } : {}), ...(before ? { before } : {}) };
  if (query.filter) body.filter = query.filter.map(encodeFilterQuery);
  return body;
}

function encodeFilterQuery(query: FilterQuery): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (query.must) out.must = encodeCriteriaMap(query.must);
  if (query.must_not) out.must_not = encodeCriteriaMap(query.must_not);
  return out;
}

function encodeCriteriaMap(map: Record<string, FilterCriteria>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [property, criteria] of Object.entries(map)) {
    if (Array.isArray(criteria)) out[property] = (criteria as readonly FilterValue[]).map(filterValue);
    else {
      const c = criteria as Exclude<FilterCriteria, readonly FilterValue[]>;
      if ((c.operator === 'Between' || c.operator === 'BetweenInclusive') && c.values.length !== 2) {
        throw new RangeError(`${property}: ${c.operator} takes two values (got ${c.values.length})`);
      }
      out[property] = { ...(c.operator ? { operator: c.operator } : {}), values: c.values.map(filterValue), ...(c.match ? { match: c.match } : {}) };
    }
  }
  return out;
}
