import type * as z from 'zod';
import { validationProblem } from '../../http/problem.js';
import { requestPath } from '../../http/validation.js';
import { ErrorBag } from '../../tags/seeding.js';
import { DestinationQueryRequestSchema } from '../schemas.js';
import type { Operator } from './operators.js';
import { checkCommon, emptyQuery, fail, setPaging, setPeriod, type Criterion, type DestinationQuery, type FilterQuery } from './params.js';

/**
 * The POST form of a destination query: the body is checked against `DestinationQueryRequest`, the
 * very schema the OpenAPI description publishes (destinations/schemas.ts), so what the emulator
 * accepts and what the document allows cannot differ; this file only normalises an accepted body
 * and adds the checks a JSON Schema cannot state (the paging window, `after` against the sort,
 * datetimes).
 */

type Body = z.output<typeof DestinationQueryRequestSchema>;
type CriteriaMap = NonNullable<NonNullable<Body['filter']>[number]['must']>;

const PERIOD_HINT = 'In a POST body the period is `period: { since, before }`.';

/** zod issues -> `errors` by request path: a union reports the branch of the value's own type, an unknown member its own path. */
function collect(issues: readonly z.core.$ZodIssue[], base: readonly PropertyKey[], errors: Record<string, string[]>): void {
  const add = (path: readonly PropertyKey[], message: string) => (errors[requestPath(path)] ??= []).push(message);
  for (const issue of issues) {
    const path = [...base, ...issue.path];
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys)
        add([...path, key], path.length === 0 && (key === 'periodSince' || key === 'periodBefore') ? PERIOD_HINT : `Unknown member ${key}.`);
    } else if (issue.code === 'invalid_union') {
      // A branch that failed only because the value is of another type says nothing about this value.
      const typeMismatch = (branch: readonly z.core.$ZodIssue[]) => branch.every((i) => i.code === 'invalid_type' && i.path.length === 0);
      const relevant = issue.errors.filter((branch) => !typeMismatch(branch));
      if (relevant.length === 1) collect(relevant[0]!, path, errors);
      else {
        const expected = [...new Set(issue.errors.flat().flatMap((i) => (i.code === 'invalid_type' ? [i.expected] : [])))];
        add(path, expected.length > 0 ? `Invalid input: expected ${expected.join(' or ')}.` : issue.message);
      }
    } else add(path, issue.message);
  }
}

const list = (value: string | string[] | null | undefined): string[] | undefined =>
  value === undefined || value === null ? undefined : typeof value === 'string' ? [value] : value;

function criteriaOf(map: CriteriaMap | null | undefined, at: string): Criterion[] {
  return Object.entries(map ?? {}).map(([name, criteria]) => {
    const path = `${at}.${name}`;
    // Spec: Filtering rule 4 — values are always arrays; a bare array is Equal, ANY of them.
    if (Array.isArray(criteria)) return { name, operator: 'Equal', values: criteria, match: 'Any', path };
    return { name, operator: (criteria.operator ?? 'Equal') as Operator, values: criteria.values, match: criteria.match ?? 'Any', path };
  });
}

/** POST form: a JSON object; an empty body is the same as `{}` (spec: every parameter is optional). */
export function parsePostQuery(raw: unknown): DestinationQuery {
  const parsed = DestinationQueryRequestSchema.safeParse(raw);
  if (!parsed.success) {
    const errors: Record<string, string[]> = {};
    collect(parsed.error.issues, [], errors);
    throw validationProblem(errors);
  }
  const body = parsed.data;
  const bag = new ErrorBag();
  const q = emptyQuery();
  q.listIds = body.listIds === true;
  q.includeTotals = body.includeTotals === true;
  q.includeMeta = body.includeMeta === true;
  q.caseInsensitiveSearch = body.caseInsensitiveSearch === true;
  setPaging(q, body.top ?? undefined, body.skip ?? undefined, bag);
  const select = list(body.select);
  if (select) q.select = select;
  if (body.after !== undefined && body.after !== null) q.after = Array.isArray(body.after) ? body.after : [body.after];
  // JSON object keys keep their order (the parsed object has the schema's): `sortAsc` before
  // `sortDesc` in the body sorts by it first.
  for (const key of Object.keys(raw as object)) {
    if (key !== 'sortAsc' && key !== 'sortDesc') continue;
    (list(body[key]) ?? []).forEach((name, i) => q.sort.push({ name, descending: key === 'sortDesc', path: `${key}[${i}]` }));
  }
  if (body.language !== undefined && body.language !== null) q.language = body.language;
  q.search = list(body.search) ?? [];
  const searchOn = list(body.searchOn);
  if (searchOn) q.searchOn = searchOn;
  if (body.period) setPeriod(q, body.period.since, body.period.before, 'period.since', 'period.before', bag);
  const queries: FilterQuery[] = (body.filter ?? []).map((f, i) => ({
    must: criteriaOf(f.must, `filter[${i}].must`),
    mustNot: criteriaOf(f.must_not, `filter[${i}].must_not`),
  }));
  const ids = list(body.id);
  if (ids?.length) {
    // `id` in a body is a filter on property id, AND-ed with every query of `filter`.
    const idCriterion: Criterion = { name: 'id', operator: 'Equal', values: ids, match: 'Any', path: 'id' };
    q.filter = queries.length ? queries.map((f) => ({ ...f, must: [idCriterion, ...f.must] })) : [{ must: [idCriterion], mustNot: [] }];
  } else q.filter = queries;
  checkCommon(q, bag);
  if (!bag.empty) fail(bag);
  return q;
}
