import { ingestOpenApi } from '../../ingest/openapi.js';
import type { EmulatorContext } from '../context.js';

/**
 * `GET /openapi.json` (our choice of path: the spec says the ingest interface is published as an
 * OpenAPI 3.1 description but not where): public, no credential, like the destinations'
 * `/v1/openapi`. The server URL is the origin the caller used.
 */
export const INGEST_OPENAPI_PATH = '/openapi.json';

export function registerIngestOpenApiRoute(ctx: EmulatorContext): void {
  let cached: Record<string, unknown> | undefined;
  ctx.router.add('GET', INGEST_OPENAPI_PATH, ({ req }) => {
    cached ??= ingestOpenApi();
    const host = req.headers.host;
    const body = host ? { ...cached, servers: [{ url: `http://${host}` }] } : cached;
    return { status: 200, body };
  });
}
