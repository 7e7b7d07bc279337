import { openApiDocument } from '../openapi/document.js';
import type { JsonSchema } from '../openapi/json-schema.js';
import type { ReadEntry } from '../sources/read-shape.js';
import { QUERY_GET, QUERY_POST } from './operations.js';
import { endpointSchema, type ExposedProperty } from './query/schema.js';
import type { DestinationConfig } from './registry.js';

/**
 * Spec: "The specification of a destination is at .../v1/openapi and lists the property types per
 * endpoint". An OpenAPI 3.1 document built from the same declarations as the whole API's query
 * routes (operations.ts), narrowed to this destination: one GET and one POST operation per
 * endpoint, a result schema per endpoint whose properties carry their query value type in
 * `x-property-type` (String, DateTime, Integer, Double, Bool), which decides the filter operators
 * they accept, and an Equal filter parameter per exposed property in the GET form.
 */
export function destinationOpenApi(destination: DestinationConfig, entries: readonly ReadEntry[]): Record<string, unknown> {
  const generic = openApiDocument([QUERY_GET, QUERY_POST], {
    title: `${destination.customer}/${destination.destination}`,
    version: destination.apiVersionId,
    description: `Destination query API of ${destination.customer}/${destination.destination}${destination.protected ? ' (protected: a destination token on every request)' : ' (public)'}.`,
    serverUrl: `/${destination.customer}/${destination.destination}/v1`,
  });
  const item = (generic.paths as Record<string, Record<string, JsonSchema>>)['/{customer}/{destination}/v1/{endpoint}']!;
  const components = generic.components as { schemas: Record<string, JsonSchema>; securitySchemes: Record<string, JsonSchema> };
  const paths: Record<string, unknown> = {};
  for (const endpoint of destination.endpoints) {
    const schema = endpointSchema(endpoint, entries);
    const resultName = `${endpoint.name}Result`;
    components.schemas[resultName] = { type: 'object', properties: Object.fromEntries(schema.properties.map((p) => [p.name, propertySchema(p)])) };
    const narrow = (operation: JsonSchema, extraParameters: JsonSchema[]): JsonSchema => {
      const parameters = ((operation.parameters ?? []) as JsonSchema[]).filter((p) => p.in !== 'path' && p.name !== 'filters');
      const responses = structuredClone(operation.responses) as Record<string, { content: Record<string, { schema: JsonSchema; example?: unknown }> }>;
      const ok = responses['200']!.content['application/json']!;
      ok.schema = { allOf: [ok.schema, { properties: { results: { type: 'array', items: { $ref: `#/components/schemas/${resultName}` } } } }] };
      delete ok.example;
      if (!destination.protected) delete (responses as Partial<typeof responses>)['401'];
      const { parameters: _generic, ...rest } = operation;
      return {
        ...rest,
        operationId: `${operation.operationId}_${endpoint.name}`,
        summary: `${String(operation.summary)} Endpoint \`${endpoint.name}\`.`,
        security: destination.protected ? [{ destinationToken: [] }] : [],
        ...(parameters.length + extraParameters.length > 0 ? { parameters: [...parameters, ...extraParameters] } : {}),
        responses,
      };
    };
    paths[`/${endpoint.name}`] = { get: narrow(item.get!, filterParameters(schema.properties)), post: narrow(item.post!, []) };
  }
  if (!destination.protected) delete (components as Partial<typeof components>).securitySchemes;
  return { ...generic, paths, components, 'x-languages': destination.languages };
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

/** GET form: every other query parameter is an Equal filter on the property of that name. */
function filterParameters(properties: readonly ExposedProperty[]): JsonSchema[] {
  return properties
    .filter((p) => p.name !== 'id')
    .map((p) => ({
      name: p.name,
      in: 'query',
      required: false,
      description: `Equal filter on \`${p.name}\` (repeat for OR).`,
      style: 'form',
      explode: true,
      schema: { type: 'array', items: { type: 'string' } },
      'x-property-type': p.type,
    }));
}
