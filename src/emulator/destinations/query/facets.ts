import type { EndpointFacet } from '../registry.js';
import type { Row } from './schema.js';

/** Spec: Facet `propertyId`, `header` (localized label), `values` of `{count, key}`. */
export interface FacetResult {
  propertyId: string;
  header: string;
  values: Array<{ count: number; key: string }>;
}

/**
 * Counts the values of each configured facet over every matching row (before paging): a list
 * property counts each element. Most frequent first, ties by key; at most `size` values.
 */
export function computeFacets(facets: readonly EndpointFacet[], rows: readonly Row[], language: string, defaultLanguage: string): FacetResult[] {
  return facets.map((facet) => {
    const counts = new Map<string, number>();
    for (const row of rows) {
      const value = row.values.get(facet.propertyId);
      if (value === null || value === undefined) continue;
      const items = Array.isArray(value) ? value : [value];
      // A list holding a value twice still counts the row once for it.
      for (const key of new Set(items.map(String))) counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    const values = [...counts]
      .map(([key, count]) => ({ count, key }))
      .sort((a, b) => b.count - a.count || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
      .slice(0, facet.size);
    return { propertyId: facet.propertyId, header: headerOf(facet, language, defaultLanguage), values };
  });
}

function headerOf(facet: EndpointFacet, language: string, defaultLanguage: string): string {
  const header = facet.header ?? {};
  const find = (lang: string) => Object.entries(header).find(([k]) => k.toLowerCase() === lang.toLowerCase())?.[1];
  return find(language) ?? find(defaultLanguage) ?? Object.values(header)[0] ?? facet.propertyId;
}
