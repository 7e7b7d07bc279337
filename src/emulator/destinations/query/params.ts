import { HttpProblem } from '../../http/problem.js';
import { ErrorBag } from '../../tags/seeding.js';
import { DESTINATION_GET_QUERY } from '../schemas.js';
import type { Operator } from './operators.js';
import { normalizeDateTime } from './values.js';

export { OPERATORS, type Operator } from './operators.js';

/**
 * One normalized query out of the GET (query string, here) and POST (JSON body, post-body.ts) forms
 * of the spec's "Destination query API" parameters. Only syntax is checked here; names and value
 * types are resolved against the endpoint in filter.ts / order.ts.
 */

export interface Criterion {
  /** Property name (exposed name, or source property ID). */
  name: string;
  operator: Operator;
  values: unknown[];
  match: 'Any' | 'All';
  /** Request path of the criterion, for validation messages. */
  path: string;
}

/** One query of `filter`: every `must` criterion holds and no `must_not` criterion holds. */
export interface FilterQuery {
  must: Criterion[];
  mustNot: Criterion[];
}

export interface SortKey {
  name: string;
  descending: boolean;
  path: string;
}

export interface DestinationQuery {
  /** OR between queries (spec: Filtering rule 2); empty = everything. */
  filter: FilterQuery[];
  select?: string[];
  listIds: boolean;
  includeTotals: boolean;
  includeMeta: boolean;
  top?: number;
  skip: number;
  after?: unknown[];
  sort: SortKey[];
  language?: string;
  search: string[];
  searchOn?: string[];
  caseInsensitiveSearch: boolean;
  /** Normalized UTC datetimes (see values.ts). */
  periodSince?: string;
  periodBefore?: string;
}

/** The named parameters of the GET form (declared with the route); any other is an Equal filter. */
const RESERVED: ReadonlySet<string> = new Set(Object.keys(DESTINATION_GET_QUERY));

export function emptyQuery(): DestinationQuery {
  return { filter: [], listIds: false, includeTotals: false, includeMeta: false, skip: 0, sort: [], search: [], caseInsensitiveSearch: false };
}

export function fail(bag: ErrorBag): never {
  throw new HttpProblem(400, 'One or more validation errors occurred.', bag.errors);
}

/** GET form: repeated parameters for arrays; every other parameter is an Equal filter on that property. */
export function parseGetQuery(query: URLSearchParams): DestinationQuery {
  const bag = new ErrorBag();
  const q = emptyQuery();
  const single = (key: string): string | undefined => {
    const all = query.getAll(key);
    if (all.length > 1) bag.add(key, `${key} may be given once.`);
    return all[0];
  };
  const bool = (key: string): boolean => {
    const raw = single(key);
    if (raw === undefined) return false;
    if (/^true$/i.test(raw)) return true;
    if (!/^false$/i.test(raw)) bag.add(key, `${key} must be true or false.`);
    return false;
  };
  const int = (key: string): number | undefined => {
    const raw = single(key);
    if (raw === undefined) return undefined;
    if (!/^-?\d+$/.test(raw)) {
      bag.add(key, `${key} must be an integer.`);
      return undefined;
    }
    return Number(raw);
  };
  q.listIds = bool('listIds');
  q.includeTotals = bool('includeTotals');
  q.includeMeta = bool('includeMeta');
  q.caseInsensitiveSearch = bool('caseInsensitiveSearch');
  setPaging(q, int('top'), int('skip'), bag);
  const select = query.getAll('select');
  if (select.length) q.select = select;
  const after = query.getAll('after');
  if (after.length) q.after = after;
  // Spec: sortAsc and sortDesc are both repeatable; their relative priority is the order of appearance.
  for (const [key, value] of query) {
    if (key === 'sortAsc' || key === 'sortDesc') q.sort.push({ name: value, descending: key === 'sortDesc', path: key });
  }
  const language = single('language');
  if (language !== undefined) q.language = language;
  q.search = query.getAll('search');
  const searchOn = query.getAll('searchOn');
  if (searchOn.length) q.searchOn = searchOn;
  setPeriod(q, single('periodSince'), single('periodBefore'), 'periodSince', 'periodBefore', bag);
  // Spec: Filtering rule 1 — Equal everywhere, AND across properties, OR within one property.
  const must: Criterion[] = [];
  const ids = query.getAll('id');
  if (ids.length) must.push({ name: 'id', operator: 'Equal', values: ids, match: 'Any', path: 'id' });
  const seen = new Set<string>();
  for (const key of query.keys()) {
    if (RESERVED.has(key) || seen.has(key)) continue;
    seen.add(key);
    must.push({ name: key, operator: 'Equal', values: query.getAll(key), match: 'Any', path: key });
  }
  if (must.length) q.filter = [{ must, mustNot: [] }];
  checkCommon(q, bag);
  if (!bag.empty) fail(bag);
  return q;
}

/** Spec: `top` plus `skip` retrieval is capped at 10,000 entries. */
export const RESULT_WINDOW = 10_000;

export function setPaging(q: DestinationQuery, top: number | undefined, skip: number | undefined, bag: ErrorBag): void {
  if (top !== undefined) {
    if (top < 0 || top > RESULT_WINDOW) bag.add('top', `top must be 0..${RESULT_WINDOW}.`);
    else q.top = top;
  }
  if (skip !== undefined) {
    if (skip < 0) bag.add('skip', 'skip must not be negative.');
    else q.skip = skip;
  }
  if ((top ?? 0) + (skip ?? 0) > RESULT_WINDOW || (skip ?? 0) >= RESULT_WINDOW) {
    bag.add('skip', `top plus skip must stay within ${RESULT_WINDOW} entries; use after with a sort beyond it.`);
  }
}

export function setPeriod(q: DestinationQuery, since: unknown, before: unknown, sincePath: string, beforePath: string, bag: ErrorBag): void {
  for (const [raw, path, key] of [
    [since, sincePath, 'periodSince'],
    [before, beforePath, 'periodBefore'],
  ] as const) {
    if (raw === undefined || raw === null) continue;
    const n = typeof raw === 'string' ? normalizeDateTime(raw) : undefined;
    if (!n) bag.add(path, `${path} must be a datetime (yyyy-MM-dd'T'HH:mm:ss.SSSSSSSZ).`);
    else q[key] = n;
  }
}

export function checkCommon(q: DestinationQuery, bag: ErrorBag): void {
  if (q.after && q.sort.length === 0) bag.add('after', 'after needs sortAsc or sortDesc.');
  if (q.after && q.after.length > q.sort.length) bag.add('after', 'after has more values than there are sort properties.');
}
