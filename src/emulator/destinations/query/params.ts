import { HttpProblem } from '../../http/problem.js';
import { ErrorBag, isPlainObject } from '../../tags/seeding.js';
import { DESTINATION_GET_QUERY } from '../schemas.js';
import { OPERATORS, type Operator } from './operators.js';
import { normalizeDateTime } from './values.js';

export { OPERATORS, type Operator } from './operators.js';

/**
 * One normalized query out of the GET (query string) and POST (JSON body) forms of the spec's
 * "Destination query API" parameters. Only syntax is checked here; names and value types are
 * resolved against the endpoint in filter.ts / order.ts.
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

function emptyQuery(): DestinationQuery {
  return { filter: [], listIds: false, includeTotals: false, includeMeta: false, skip: 0, sort: [], search: [], caseInsensitiveSearch: false };
}

function fail(bag: ErrorBag): never {
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

const POST_KEYS = new Set([...RESERVED, 'filter', 'period']);

/** POST form: a JSON object; an empty body is the same as `{}` (spec: every parameter is optional). */
export function parsePostQuery(body: unknown): DestinationQuery {
  const bag = new ErrorBag();
  const q = emptyQuery();
  if (!isPlainObject(body)) throw new HttpProblem(400, 'The body must be a JSON object.', { $: ['Expected an object.'] });
  for (const key of Object.keys(body)) {
    if (!POST_KEYS.has(key) && key !== 'periodSince' && key !== 'periodBefore') bag.add(key, `Unknown parameter ${key}.`);
  }
  for (const key of ['periodSince', 'periodBefore']) {
    if (key in body) bag.add(key, 'In a POST body the period is `period: { since, before }`.');
  }
  const bool = (key: string): boolean => {
    const v = body[key];
    if (v === undefined || v === null) return false;
    if (typeof v !== 'boolean') bag.add(key, `${key} must be a boolean.`);
    return v === true;
  };
  const int = (key: string): number | undefined => {
    const v = body[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'number' || !Number.isInteger(v)) {
      bag.add(key, `${key} must be an integer.`);
      return undefined;
    }
    return v;
  };
  const strings = (key: string): string[] | undefined => {
    const v = body[key];
    if (v === undefined || v === null) return undefined;
    const arr = typeof v === 'string' ? [v] : v;
    if (!Array.isArray(arr) || arr.some((x) => typeof x !== 'string')) {
      bag.add(key, `${key} must be an array of strings.`);
      return undefined;
    }
    return arr as string[];
  };
  q.listIds = bool('listIds');
  q.includeTotals = bool('includeTotals');
  q.includeMeta = bool('includeMeta');
  q.caseInsensitiveSearch = bool('caseInsensitiveSearch');
  setPaging(q, int('top'), int('skip'), bag);
  const select = strings('select');
  if (select) q.select = select;
  if (body.after !== undefined && body.after !== null) {
    const a = body.after;
    if (Array.isArray(a)) q.after = a;
    else if (['string', 'number', 'boolean'].includes(typeof a)) q.after = [a];
    else bag.add('after', 'after must be a string.');
  }
  // JSON object keys keep their order, so `sortAsc` before `sortDesc` in the body sorts by it first.
  for (const key of Object.keys(body)) {
    if (key !== 'sortAsc' && key !== 'sortDesc') continue;
    (strings(key) ?? []).forEach((name, i) => q.sort.push({ name, descending: key === 'sortDesc', path: `${key}[${i}]` }));
  }
  if (body.language !== undefined && body.language !== null) {
    if (typeof body.language !== 'string') bag.add('language', 'language must be a string.');
    else q.language = body.language;
  }
  q.search = strings('search') ?? [];
  const searchOn = strings('searchOn');
  if (searchOn) q.searchOn = searchOn;
  const period = body.period;
  if (period !== undefined && period !== null) {
    if (!isPlainObject(period)) bag.add('period', 'period must be an object { since, before }.');
    else setPeriod(q, period.since, period.before, 'period.since', 'period.before', bag);
  }
  const ids = strings('id');
  const queries = parseFilter(body.filter, bag);
  if (ids?.length) {
    // `id` in a body is a filter on property id, AND-ed with every query of `filter`.
    const idCriterion: Criterion = { name: 'id', operator: 'Equal', values: ids, match: 'Any', path: 'id' };
    q.filter = queries.length ? queries.map((f) => ({ ...f, must: [idCriterion, ...f.must] })) : [{ must: [idCriterion], mustNot: [] }];
  } else q.filter = queries;
  checkCommon(q, bag);
  if (!bag.empty) fail(bag);
  return q;
}

function parseFilter(raw: unknown, bag: ErrorBag): FilterQuery[] {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) {
    bag.add('filter', 'filter must be an array of queries.');
    return [];
  }
  return raw.map((query, i) => {
    const at = `filter[${i}]`;
    const out: FilterQuery = { must: [], mustNot: [] };
    if (!isPlainObject(query)) {
      bag.add(at, 'A query must be an object with must and/or must_not.');
      return out;
    }
    for (const key of Object.keys(query)) if (key !== 'must' && key !== 'must_not') bag.add(`${at}.${key}`, 'Only must and must_not are allowed.');
    out.must = parseCriteria(query.must, `${at}.must`, bag);
    out.mustNot = parseCriteria(query.must_not, `${at}.must_not`, bag);
    return out;
  });
}

function parseCriteria(raw: unknown, at: string, bag: ErrorBag): Criterion[] {
  if (raw === undefined || raw === null) return [];
  if (!isPlainObject(raw)) {
    bag.add(at, 'Expected an object mapping property IDs to criteria.');
    return [];
  }
  const out: Criterion[] = [];
  for (const [name, criteria] of Object.entries(raw)) {
    const path = `${at}.${name}`;
    if (Array.isArray(criteria)) {
      out.push({ name, operator: 'Equal', values: criteria, match: 'Any', path });
      continue;
    }
    if (!isPlainObject(criteria)) {
      bag.add(path, 'Criteria are an array of values or an object { operator, values, match }.');
      continue;
    }
    const operator = criteria.operator ?? 'Equal';
    if (!OPERATORS.includes(operator as Operator)) bag.add(`${path}.operator`, `operator must be one of ${OPERATORS.join(', ')}.`);
    const match = criteria.match ?? 'Any';
    if (match !== 'Any' && match !== 'All') bag.add(`${path}.match`, 'match must be Any or All.');
    // Spec: Filtering rule 4 — values are always passed as arrays.
    if (!Array.isArray(criteria.values) || criteria.values.length === 0) bag.add(`${path}.values`, 'values must be a non-empty array.');
    else out.push({ name, operator: operator as Operator, values: criteria.values, match: match as 'Any' | 'All', path });
  }
  return out;
}

/** Spec: `top` plus `skip` retrieval is capped at 10,000 entries. */
export const RESULT_WINDOW = 10_000;

function setPaging(q: DestinationQuery, top: number | undefined, skip: number | undefined, bag: ErrorBag): void {
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

function setPeriod(q: DestinationQuery, since: unknown, before: unknown, sincePath: string, beforePath: string, bag: ErrorBag): void {
  for (const [raw, path, key] of [[since, sincePath, 'periodSince'], [before, beforePath, 'periodBefore']] as const) {
    if (raw === undefined || raw === null) continue;
    const n = typeof raw === 'string' ? normalizeDateTime(raw) : undefined;
    if (!n) bag.add(path, `${path} must be a datetime (yyyy-MM-dd'T'HH:mm:ss.SSSSSSSZ).`);
    else q[key] = n;
  }
}

function checkCommon(q: DestinationQuery, bag: ErrorBag): void {
  if (q.after && q.sort.length === 0) bag.add('after', 'after needs sortAsc or sortDesc.');
  if (q.after && q.after.length > q.sort.length) bag.add('after', 'after has more values than there are sort properties.');
  q.search.forEach((phrase, i) => {
    if (phrase === '') bag.add(`search[${i}]`, 'A search phrase must not be empty.');
  });
}
