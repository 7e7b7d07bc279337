import { z } from 'zod';
import {
  legacyImportAcceptedSchema,
  legacyImportVerifiedSchema,
  problemDetailsSchema,
  typedIngestResponseSchema,
  validationProblemSchema,
} from './response-schema.js';
import { typedIngestRequestSchema } from './schema.js';

/** Spec, Versioning 4: the ingest interface description has version 1.0.0 and is OpenAPI 3.1. */
export const INGEST_API_VERSION = '1.0.0';

type JsonSchema = Record<string, unknown>;

/**
 * zod -> JSON Schema 2020-12 (the dialect of OpenAPI 3.1). Two adjustments, both to say what the
 * schema does rather than what zod's default output claims:
 * - a `bigint` (integers beyond 2^53 parsed exactly) is a JSON `integer`;
 * - a plain `z.object` strips unknown members instead of refusing them, so it does not get
 *   `additionalProperties: false` (only `z.strictObject` does).
 */
export function toOpenApiSchema(schema: z.ZodType): JsonSchema {
  const json = z.toJSONSchema(schema, {
    io: 'output',
    unrepresentable: 'any',
    override: (ctx) => {
      const def = (ctx.zodSchema as unknown as { _zod: { def: { type: string; catchall?: { _zod: { def: { type: string } } } } } })._zod.def;
      if (def.type === 'bigint') ctx.jsonSchema.type = 'integer';
      if (def.type === 'object' && def.catchall === undefined) delete ctx.jsonSchema.additionalProperties;
    },
  }) as JsonSchema;
  delete json.$schema;
  return json;
}

const problemResponse = (description: string, schema = 'ProblemDetails') => ({
  description,
  content: { 'application/problem+json': { schema: { $ref: `#/components/schemas/${schema}` } } },
});

const rateLimited = {
  ...problemResponse('Rate limited (tenant request rate); retry after `Retry-After`.'),
  headers: { 'Retry-After': { description: 'Integer seconds, minimum 1.', schema: { type: 'integer', minimum: 1 } } },
};

const bearer = [{ bearer: [] }, { apiKey: [] }];

function pathParameter(name: string, description: string) {
  return { name, in: 'path', required: true, description, schema: { type: 'string', minLength: 1 } };
}

/**
 * The OpenAPI 3.1 description of the ingest interface: typed ingest (`POST /sources/{sourceId}`)
 * and the legacy import operations. Built from the zod schemas the emulator validates with.
 */
export function ingestOpenApi(serverUrl?: string): JsonSchema {
  const legacyRequest = {
    type: 'object',
    required: ['entries'],
    description: 'Not shown in the spec; the shape chosen by this emulator: string values at rest, null clears.',
    properties: {
      entries: {
        type: 'array',
        minItems: 1,
        items: {
          type: 'object',
          required: ['id'],
          properties: {
            id: { type: 'string', minLength: 1 },
            properties: { type: 'object', additionalProperties: { anyOf: [{ type: 'string' }, { type: 'null' }] } },
          },
        },
      },
    },
  };
  const legacyOperation = (summary: string, status: '200' | '202', schema: string) => ({
    summary,
    security: bearer,
    parameters: [pathParameter('dataSource', 'Source ID.')],
    requestBody: { required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/LegacyImportRequest' } } } },
    responses: {
      [status]: { description: status === '202' ? 'Queued.' : 'Valid; nothing queued.', content: { 'application/json': { schema: { $ref: `#/components/schemas/${schema}` } } } },
      '400': problemResponse('Validation failed; messages keyed by request path.', 'ValidationProblem'),
      '401': problemResponse('No valid credential.'),
      '403': problemResponse('Neither import-datasource nor write:sources, or the source is not granted.'),
      '404': problemResponse('Unknown source.'),
      ...(status === '202' ? { '429': rateLimited } : {}),
    },
  });
  return {
    openapi: '3.1.0',
    info: {
      title: 'Data Platform ingest API',
      version: INGEST_API_VERSION,
      description: 'Typed source ingest and legacy import operations, as implemented by the durable-worker emulator.',
    },
    ...(serverUrl ? { servers: [{ url: serverUrl }] } : {}),
    paths: {
      '/sources/{sourceId}': {
        post: {
          operationId: 'ingestTyped',
          summary: 'Typed source ingest: every entry is an upsert; all-or-nothing validation.',
          security: [{ bearer: [] }],
          parameters: [pathParameter('sourceId', 'Customer-facing source ID within the tenant.')],
          requestBody: { required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/TypedIngestRequest' } } } },
          responses: {
            '202': { description: 'Whole batch valid and queued.', content: { 'application/json': { schema: { $ref: '#/components/schemas/TypedIngestResponse' } } } },
            '400': problemResponse('Any validation failure, including exceeded tenant ceilings (named in the message).', 'ValidationProblem'),
            '401': problemResponse('No valid credential.'),
            '403': problemResponse('No write:sources scope, a data-provider token, or the source is not granted.'),
            '404': problemResponse('Unknown source (when sources are not created on first ingest).'),
            '415': problemResponse('The body is not JSON.'),
            '429': rateLimited,
          },
        },
      },
      '/datasources/{dataSource}/import/verify': {
        post: { operationId: 'verifyLegacyImport', ...legacyOperation('Validate a legacy import without queueing it or spending rate budget.', '200', 'LegacyImportVerified') },
      },
      '/datasources/{dataSource}/import': {
        post: { operationId: 'legacyImport', ...legacyOperation('Queue a legacy import.', '202', 'LegacyImportAccepted') },
      },
    },
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
        apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key' },
      },
      schemas: {
        TypedIngestRequest: toOpenApiSchema(typedIngestRequestSchema),
        TypedIngestResponse: toOpenApiSchema(typedIngestResponseSchema),
        ProblemDetails: toOpenApiSchema(problemDetailsSchema),
        ValidationProblem: toOpenApiSchema(validationProblemSchema),
        LegacyImportRequest: legacyRequest,
        LegacyImportAccepted: toOpenApiSchema(legacyImportAcceptedSchema),
        LegacyImportVerified: toOpenApiSchema(legacyImportVerifiedSchema),
      },
    },
  };
}
