import { HttpProblem } from '../../http/problem.js';
import { ErrorBag } from '../../tags/seeding.js';
import type { ReadEntry } from '../../sources/read-shape.js';
import type { DestinationConfig, EndpointConfig } from '../registry.js';
import { computeFacets, type FacetResult } from './facets.js';
import { compileFilter, compilePeriod } from './filter.js';
import { compileOrdering, page } from './order.js';
import type { DestinationQuery } from './params.js';
import { compileProjection, type Result } from './project.js';
import { endpointSchema, rowsOf } from './schema.js';
import { compileSearch } from './search.js';

/** Spec: Destination query response. */
export interface DestinationQueryResponse {
  language: string;
  total?: number;
  results: Result[];
  facets?: FacetResult[];
}

/** Runs one normalized query over the entries of the destination's source: filter -> search -> sort -> after -> page -> project. */
export function runQuery(
  destination: DestinationConfig,
  endpoint: EndpointConfig,
  entries: readonly ReadEntry[],
  query: DestinationQuery,
): DestinationQueryResponse {
  const bag = new ErrorBag();
  const language = resolveLanguage(destination, query.language, bag);
  const schema = endpointSchema(endpoint, entries);
  const filter = compileFilter(query, schema, bag);
  const period = compilePeriod(query);
  const search = compileSearch(query, schema, bag);
  const ordering = compileOrdering(query, schema, bag);
  const projection = compileProjection(query, schema, endpoint.name, bag);
  if (!bag.empty) throw new HttpProblem(400, 'One or more validation errors occurred.', bag.errors);

  // Spec: `language=all` returns one entry per language; `top` limits then apply to those rows.
  const languages = language === 'all' ? destination.languages : [language];
  const matching = rowsOf(entries, languages).filter((row) => filter(row) && period(row) && search(row));
  const ordered = ordering.after(ordering.sort(matching));
  const response: DestinationQueryResponse = { language, results: page(ordered, query).map((row) => projection.project(row)) };
  // `total` counts every match; paging (`skip`, `top`, `after`) does not change it.
  if (query.includeTotals) response.total = matching.length;
  if (endpoint.facets.length > 0) {
    const defaultLanguage = destination.languages[0]!;
    response.facets = computeFacets(endpoint.facets, matching, language === 'all' ? defaultLanguage : language, defaultLanguage);
  }
  return response;
}

function resolveLanguage(destination: DestinationConfig, requested: string | undefined, bag: ErrorBag): string {
  if (requested === undefined) return destination.languages[0]!;
  if (requested.toLowerCase() === 'all') return 'all';
  const known = destination.languages.find((l) => l.toLowerCase() === requested.toLowerCase());
  if (known) return known;
  bag.add('language', `language must be one of ${destination.languages.join(', ')} or all.`);
  return requested;
}
