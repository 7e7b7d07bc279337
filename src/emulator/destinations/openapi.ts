import type { ReadEntry } from '../sources/read-shape.js';
import type { DestinationConfig } from './registry.js';
import { endpointSchema, type ExposedProperty } from './query/schema.js';

/**
 * Spec: "The specification of a destination is at .../v1/openapi and lists the property types per
 * endpoint". An OpenAPI 3.1 document: one GET and one POST operation per endpoint, a result schema
 * per endpoint whose properties carry their query value type in `x-property-type` (String,
 * DateTime, Integer, Double, Bool), which decides the filter operators they accept.
 */
export function destinationOpenApi(destination: DestinationConfig, entries: readonly ReadEntry[]): Record<string, unknown> {
  const paths: Record<string, unknown> = {};
  const schemas: Record<string, unknown> = {
    QueryRequest: queryRequestSchema(),
    Facet: {
      type: 'object',
      properties: {
        propertyId: { type: 'string' },
        header: { type: 'string' },
        values: { type: 'array', items: { type: 'object', properties: { count: { type: 'integer' }, key: { type: 'string' } } } },
      },
    },
  };
  for (const endpoint of destination.endpoints) {
    const schema = endpointSchema(endpoint, entries);
    const resultName = `${endpoint.name}Result`;
    schemas[resultName] = {
      type: 'object',
      properties: Object.fromEntries(schema.properties.map((p) => [p.name, propertySchema(p)])),
    };
    const response = {
      '200': {
        description: 'Query results',
        content: {
          'application/json': {
            schema: {
              type: 'object',
              required: ['language', 'results'],
              properties: {
                language: { type: 'string' },
                total: { type: 'integer' },
                results: { type: 'array', items: { $ref: `#/components/schemas/${resultName}` } },
                ...(endpoint.facets.length ? { facets: { type: 'array', items: { $ref: '#/components/schemas/Facet' } } } : {}),
              },
            },
          },
        },
      },
      '400': { description: 'Invalid query', content: { 'application/problem+json': {} } },
      ...(destination.protected ? { '401': { description: 'Missing, invalid or expired token' } } : {}),
    };
    paths[`/${endpoint.name}`] = {
      get: { operationId: `get_${endpoint.name}`, parameters: getParameters(schema.properties), responses: response },
      post: {
        operationId: `post_${endpoint.name}`,
        requestBody: { content: { 'application/json': { schema: { $ref: '#/components/schemas/QueryRequest' } } } },
        responses: response,
      },
    };
  }
  const doc: Record<string, unknown> = {
    openapi: '3.1.0',
    info: { title: `${destination.customer}/${destination.destination}`, version: destination.apiVersionId },
    servers: [{ url: `/${destination.customer}/${destination.destination}/v1` }],
    paths,
    components: {
      schemas,
      ...(destination.protected ? { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } } : {}),
    },
    'x-languages': destination.languages,
  };
  if (destination.protected) doc.security = [{ bearer: [] }];
  return doc;
}

function propertySchema(p: ExposedProperty): Record<string, unknown> {
  const scalar: Record<string, unknown> =
    p.type === 'Integer'
      ? { type: ['integer', 'null'], format: 'int64' }
      : p.type === 'Double'
        ? { type: ['number', 'null'], format: 'double' }
        : p.type === 'Bool'
          ? { type: ['boolean', 'null'] }
          : p.type === 'DateTime'
            ? { type: ['string', 'null'], format: 'date-time' }
            : { type: ['string', 'null'] };
  const schema = p.multiValued ? { type: 'array', items: { type: 'string' } } : scalar;
  return { ...schema, 'x-property-type': p.type, ...(p.localized ? { 'x-localized': true } : {}) };
}

function getParameters(properties: readonly ExposedProperty[]): unknown[] {
  const q = (name: string, schema: unknown) => ({ name, in: 'query', required: false, schema });
  const strings = { type: 'array', items: { type: 'string' } };
  return [
    { ...q('id', strings), explode: true },
    { ...q('select', strings), explode: true },
    q('listIds', { type: 'boolean' }),
    q('includeTotals', { type: 'boolean' }),
    q('includeMeta', { type: 'boolean' }),
    q('top', { type: 'integer', format: 'int32', minimum: 0, maximum: 10_000 }),
    q('skip', { type: 'integer', format: 'int32', minimum: 0 }),
    { ...q('after', strings), explode: true },
    { ...q('sortAsc', strings), explode: true },
    { ...q('sortDesc', strings), explode: true },
    q('language', { type: 'string' }),
    { ...q('search', strings), explode: true },
    { ...q('searchOn', strings), explode: true },
    q('caseInsensitiveSearch', { type: 'boolean' }),
    q('periodSince', { type: 'string', format: 'date-time' }),
    q('periodBefore', { type: 'string', format: 'date-time' }),
    // Every other query parameter is an Equal filter on the property of that name.
    ...properties.filter((p) => p.name !== 'id').map((p) => ({ ...q(p.name, strings), explode: true, 'x-property-type': p.type })),
  ];
}

function queryRequestSchema(): Record<string, unknown> {
  const strings = { type: 'array', items: { type: 'string' } };
  const criteria = {
    oneOf: [
      { type: 'array', items: {} },
      {
        type: 'object',
        required: ['values'],
        properties: {
          operator: { enum: ['Equal', 'GreaterThan', 'GreaterThanOrEqual', 'LessThan', 'LessThanOrEqual', 'Between', 'BetweenInclusive'] },
          values: { type: 'array', items: {} },
          match: { enum: ['Any', 'All'] },
        },
      },
    ],
  };
  const criteriaMap = { type: 'object', additionalProperties: criteria };
  return {
    type: 'object',
    properties: {
      id: strings,
      select: strings,
      listIds: { type: 'boolean' },
      includeTotals: { type: 'boolean' },
      includeMeta: { type: 'boolean' },
      top: { type: 'integer', format: 'int32' },
      skip: { type: 'integer', format: 'int32' },
      after: { type: 'string' },
      sortAsc: strings,
      sortDesc: strings,
      language: { type: 'string' },
      search: strings,
      searchOn: strings,
      caseInsensitiveSearch: { type: 'boolean' },
      period: { type: 'object', properties: { since: { type: 'string' }, before: { type: 'string' } } },
      filter: { type: 'array', items: { type: 'object', properties: { must: criteriaMap, must_not: criteriaMap } } },
    },
  };
}
