import type { EmulatorContext } from '../context.js';
import { OpenApiDocumentSchema } from '../destinations/schemas.js';
import type { OperationSpec } from './operation.js';
import { ingestDocument, platformApiDocument } from './document.js';
import { answer } from './responses.js';
import type { JsonSchema } from './json-schema.js';

/**
 * The descriptions the emulator publishes, public and without a credential like a destination's
 * `/v1/openapi` (paths: our choice, the spec says only that they are published):
 *   GET /openapi.json                the spec's ingest interface description (1.0.0)
 *   GET /openapi/platform-api.json   every route the emulator serves
 * Built once from the routes' declarations; the server URL is the origin the caller used.
 */
export const INGEST_OPENAPI_PATH = '/openapi.json';
export const PLATFORM_OPENAPI_PATH = '/openapi/platform-api.json';

const description = { tag: 'Descriptions', security: { kind: 'none' }, method: 'GET' } as const;

const INGEST: OperationSpec = {
  ...description,
  path: INGEST_OPENAPI_PATH,
  operationId: 'getIngestOpenApi',
  summary: 'The OpenAPI 3.1 description of the ingest interface (version 1.0.0).',
  responses: { '200': answer('The description.', OpenApiDocumentSchema) },
};

const PLATFORM: OperationSpec = {
  ...description,
  path: PLATFORM_OPENAPI_PATH,
  operationId: 'getPlatformOpenApi',
  summary: 'The OpenAPI 3.1 description of every route the emulator serves (this document).',
  responses: { '200': answer('The description.', OpenApiDocumentSchema) },
};

export function registerOpenApiRoutes(ctx: EmulatorContext): void {
  const documents = new Map<string, JsonSchema>();
  const serve = (operation: OperationSpec, build: (operations: OperationSpec[]) => JsonSchema) =>
    ctx.router.add(operation, ({ req }) => {
      // Built at the first request: every module has registered its routes by then.
      let document = documents.get(operation.operationId);
      if (document === undefined) documents.set(operation.operationId, (document = build(ctx.router.operations())));
      const host = req.headers.host;
      return { status: 200, body: host ? { ...document, servers: [{ url: `http://${host}`, description: 'This emulator.' }] } : document };
    });
  serve(INGEST, (operations) => ingestDocument(operations));
  serve(PLATFORM, (operations) => platformApiDocument(operations));
}
