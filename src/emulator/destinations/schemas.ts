import * as z from 'zod';
import { component } from '../openapi/components.js';
import type { ParameterSpec } from '../openapi/operation.js';
import { OPERATORS } from './query/operators.js';

/**
 * Wire schemas of destinations (spec: Issue a destination token, Destination query API) and of
 * their seeding (src/emulator/admin/routes.ts). A POST query body is validated by
 * `DestinationQueryRequestSchema` itself, the schema the OpenAPI description publishes
 * (query/post-body.ts), then normalised (key order of `sortAsc`/`sortDesc` is priority, `id` joins
 * every filter query...).
 */

export const DestinationTokenRequestSchema = component(
  'DestinationTokenRequest',
  z.object(
    {
      clientId: z.string({ error: 'clientId is required.' }).min(1, 'clientId is required.'),
      clientSecret: z.string({ error: 'clientSecret is required.' }).min(1, 'clientSecret is required.'),
    },
    { error: 'The body must be a JSON object { clientId, clientSecret }.' },
  ),
);

export const DestinationTokenSchema = component(
  'DestinationToken',
  z.strictObject({
    accessToken: z.string().min(1),
    expiresIn: z.int().min(1).meta({ description: 'Seconds (24 hours from creation); rely on it and reuse the token until it expires.' }),
  }),
);

const strings = z.array(z.string());
/** A single string is taken as a one-item array (liberal in what is accepted). */
const stringList = z.union([strings, z.string()]);
const value = z.union([z.string(), z.number(), z.boolean()]);
const criteria = z.union([
  z.array(value).meta({ description: 'Exact match against ANY of the values.' }),
  z.strictObject({
    operator: z
      .enum(OPERATORS as [string, ...string[]])
      .optional()
      .meta({ description: 'Default `Equal`; range operators apply to DateTime, Integer and Double properties.' }),
    values: z.array(value).min(1).meta({ description: 'Always an array; `Between` and `BetweenInclusive` take two.' }),
    match: z.enum(['Any', 'All']).optional().meta({ description: '`All`: every value must be present in a multi-valued property. Default `Any`.' }),
  }),
]);
const criteriaMap = z.record(z.string(), criteria).meta({ description: 'Property ID (exposed name) -> criteria; all must hold.' });
const datetime = z.string().meta({ description: "`yyyy-MM-dd'T'HH:mm:ss.SSSSSSSZ`, compared in UTC.", examples: ['2024-05-01T00:00:00.0000000Z'] });

export const DestinationQueryRequestSchema = component(
  'DestinationQueryRequest',
  z
    .strictObject({
      id: stringList.nullish().meta({ description: 'A filter on property `id`, joined to every query of `filter`.' }),
      select: stringList.nullish().meta({ description: 'Return only these properties (exposed names).' }),
      listIds: z.boolean().nullish(),
      includeTotals: z.boolean().nullish(),
      includeMeta: z.boolean().nullish(),
      top: z.int().min(0).max(10_000).nullish(),
      skip: z.int().min(0).max(9_999).nullish().meta({ description: '`top` plus `skip` stays within 10,000 entries; use `after` beyond it.' }),
      after: z
        .union([z.string(), z.number(), z.boolean(), z.array(value)])
        .nullish()
        .meta({ description: 'Entries after this value of the sort property.' }),
      sortAsc: stringList.nullish().meta({ description: 'Key order in the body is priority between `sortAsc` and `sortDesc`.' }),
      sortDesc: stringList.nullish(),
      language: z.string().nullish().meta({ description: 'A language of the destination, or `all` (one entry per language).' }),
      search: stringList.nullish().meta({ description: 'Phrases, combined with AND; `*` is a wildcard.' }),
      searchOn: stringList.nullish(),
      caseInsensitiveSearch: z.boolean().nullish(),
      period: z.strictObject({ since: datetime.nullish(), before: datetime.nullish() }).nullish(),
      filter: z
        .array(z.strictObject({ must: criteriaMap.nullish(), must_not: criteriaMap.nullish() }))
        .nullish()
        .meta({ description: 'Queries of which any one may match (OR); within a query every criterion holds.' }),
    })
    .meta({ description: 'Every parameter is optional; without parameters the first 50 results are returned.' }),
);

const FacetSchema = component(
  'Facet',
  z.strictObject({
    propertyId: z.string(),
    header: z.string().meta({ description: 'Localized label.' }),
    values: z.array(z.strictObject({ count: z.int().min(1), key: z.string() })),
  }),
);

export const DestinationQueryResponseSchema = component(
  'DestinationQueryResponse',
  z.strictObject({
    language: z.string().meta({ description: 'The language retrieved (`all` for one entry per language).' }),
    total: z.int().min(0).optional().meta({ description: 'Only with `includeTotals`.' }),
    results: z
      .array(z.record(z.string(), z.unknown()))
      .meta({ description: "Result objects; their shape is the endpoint's (see the destination's `/v1/openapi`). With `includeMeta` each carries `@meta`." }),
    facets: z.array(FacetSchema).optional().meta({ description: 'Only when facets are configured on the endpoint.' }),
  }),
);

export const OpenApiDocumentSchema = component(
  'OpenApiDocument',
  z
    .looseObject({
      openapi: z.string().regex(/^3\.1\.\d+$/),
      info: z.looseObject({ title: z.string(), version: z.string() }),
      paths: z.record(z.string(), z.unknown()),
    })
    .meta({
      description: 'An OpenAPI 3.1 description.',
    }),
);

const bool = (description: string): ParameterSpec => ({ schema: z.boolean().optional(), description });
const repeated = (description: string): ParameterSpec => ({ schema: strings.optional(), description });

/** The GET form (spec: Destination query API): arrays as repeated parameters. */
export const DESTINATION_GET_QUERY = {
  id: repeated('Entries by ID (repeat `id`).'),
  select: repeated('Return only these properties (exposed names).'),
  listIds: bool('Return only IDs.'),
  includeTotals: bool('Add `total`.'),
  includeMeta: bool('Add `@meta` to each result.'),
  top: { schema: z.int().min(0).max(10_000).optional(), description: 'Entries to return (default 50).' },
  skip: { schema: z.int().min(0).max(9_999).optional(), description: 'Entries to skip; `top` plus `skip` stays within 10,000.' },
  after: repeated('Entries after these values of the sort properties.'),
  sortAsc: repeated('Ascending sort; order of appearance with `sortDesc` is priority.'),
  sortDesc: repeated('Descending sort.'),
  language: { schema: z.string().optional(), description: 'A language of the destination, or `all`.' },
  search: repeated('Phrases, combined with AND; `*` is a wildcard.'),
  searchOn: repeated('Properties to search on.'),
  caseInsensitiveSearch: bool('Search is case sensitive by default.'),
  periodSince: { schema: datetime.optional(), description: 'Entries modified after the timestamp.' },
  periodBefore: { schema: datetime.optional(), description: 'Entries modified before the timestamp.' },
} satisfies Record<string, ParameterSpec>;

const SLUG = /^[A-Za-z0-9][A-Za-z0-9._~-]*$/;
const slugMessage = (key: string) => `${key} is required: letters, digits, '.', '_', '~' or '-'.`;
const slug = (key: string) => z.string({ error: slugMessage(key) }).regex(SLUG, slugMessage(key));
const endpointName = "name is required: letters, digits, '.', '_', '~' or '-', and not 'openapi'.";
const languagesMessage = "languages must be a non-empty array of language codes ('all' is reserved).";

const EndpointSeed = z.object(
  {
    name: z
      .string({ error: endpointName })
      .regex(SLUG, endpointName)
      .refine((name) => name !== 'openapi', endpointName),
    properties: z
      .array(
        z.object(
          {
            id: z.string({ error: 'id is required.' }).min(1, 'id is required.'),
            alias: z.string({ error: 'alias must be a non-empty string.' }).min(1, 'alias must be a non-empty string.').optional(),
          },
          { error: 'A property must be an object { id, alias? }.' },
        ),
        { error: 'properties must be an array.' },
      )
      .optional()
      .meta({ description: 'Omitted: every property of the source is exposed. `id` is always exposed; exposed names are unique.' }),
    facets: z
      .array(
        z.object(
          {
            propertyId: z.string({ error: 'propertyId is required.' }).min(1, 'propertyId is required.'),
            size: z
              .int({ error: 'size must be a positive integer.' })
              .min(1, 'size must be a positive integer.')
              .meta({ description: 'Maximum number of values; above 50 can slow responses (spec).' }),
            header: z
              .record(z.string(), z.string(), { error: 'header must map languages to strings.' })
              .optional()
              .meta({ description: 'Localized label: language -> text.' }),
          },
          { error: 'A facet must be an object.' },
        ),
        { error: 'facets must be an array.' },
      )
      .optional(),
  },
  { error: 'An endpoint must be an object.' },
);

type RawEndpoint = { name?: unknown; properties?: unknown };

/** Endpoint names are unique in a destination; exposed names (alias or ID, `id` included) in an endpoint. */
function checkNames(endpoints: readonly unknown[], issues: z.core.$RefinementCtx): void {
  const names = new Set<string>();
  endpoints.forEach((raw, i) => {
    const endpoint = (typeof raw === 'object' && raw !== null ? raw : {}) as RawEndpoint;
    if (typeof endpoint.name === 'string') {
      if (names.has(endpoint.name)) issues.addIssue({ code: 'custom', path: ['endpoints', i, 'name'], message: `Endpoint ${endpoint.name} is defined twice.` });
      names.add(endpoint.name);
    }
    if (!Array.isArray(endpoint.properties)) return;
    const exposed = new Set(['id']);
    endpoint.properties.forEach((property: { id?: unknown; alias?: unknown } | null, j) => {
      const name = typeof property?.alias === 'string' ? property.alias : typeof property?.id === 'string' ? property.id.toLowerCase() : undefined;
      if (name === undefined) return;
      if (exposed.has(name))
        issues.addIssue({ code: 'custom', path: ['endpoints', i, 'properties', j], message: `The exposed name ${name} is used twice (id is always exposed).` });
      exposed.add(name);
    });
  });
}

/** Body of `POST /_emulator/destinations` (and of the config's `destinationApis`). */
export const DestinationSeedSchema = component(
  'DestinationSeed',
  z
    .object(
      {
        customer: slug('customer'),
        destination: slug('destination'),
        protected: z.boolean({ error: 'protected must be a boolean.' }).optional(),
        sourceId: slug('sourceId'),
        tenant: z
          .string({ error: 'tenant must be a non-empty string.' })
          .min(1, 'tenant must be a non-empty string.')
          .optional()
          .meta({ description: 'Default `dev-tenant`.' }),
        languages: z
          .array(
            z
              .string({ error: languagesMessage })
              .min(1, languagesMessage)
              .refine((code) => code.toLowerCase() !== 'all', languagesMessage),
            { error: languagesMessage },
          )
          .min(1, languagesMessage)
          .refine((codes) => new Set(codes.map((code) => code.toLowerCase())).size === codes.length, 'languages must be distinct.')
          .optional()
          .meta({ description: "Distinct language codes ('all' is reserved); the first is the default of queries. Default `['en']`." }),
        endpoints: z.array(EndpointSeed, { error: 'endpoints must be a non-empty array.' }).min(1, 'endpoints must be a non-empty array.'),
      },
      { error: 'The body must be a JSON object.' },
    )
    .superRefine((seed, issues) => checkNames(seed.endpoints, issues), {
      when: (payload) => typeof payload.value === 'object' && payload.value !== null && Array.isArray((payload.value as { endpoints?: unknown }).endpoints),
    }),
);

export const DestinationSeededSchema = component(
  'DestinationSeeded',
  z.strictObject({ customer: z.string(), destination: z.string(), apiVersionId: z.uuid() }),
);
