import type { IncomingMessage } from 'node:http';
import type { EmulatorContext, Principal } from '../context.js';
import { HttpProblem } from '../http/problem.js';

/**
 * Who may do what with a source. Spec, Authentication 4-6 and 11: typed ingest needs `write:sources`
 * (never `import-datasource`), a grant for the source or for all sources, and is closed to
 * data-provider tokens. The permissions of reads, property PUT and source PATCH are "not shown";
 * we chose (documented in the report):
 * - reads: any valid credential of the tenant that is granted the source (the endpoint policy
 *   "accepts applications, users and organization API keys alike"; a worker holding only
 *   `read:events` may read the entries its events name);
 * - PUT property / PATCH source: `write:sources` and a grant for the source, no data provider
 *   (changing a source's configuration is at least as strong as writing to it).
 */

export const WRITE_SOURCES = 'write:sources';

function isGranted(principal: Principal, sourceId: string): boolean {
  return principal.sources === 'all' || principal.sources.has(sourceId);
}

function requireGrant(principal: Principal, sourceId: string): void {
  if (!isGranted(principal, sourceId)) {
    throw new HttpProblem(403, `The credential is not granted access to source '${sourceId}'.`);
  }
}

function refuseDataProvider(principal: Principal, what: string): void {
  if (principal.dataProvider) {
    throw new HttpProblem(403, `A data-provider credential cannot ${what}; it works with the legacy import operations only.`);
  }
}

export function authorizeIngest(ctx: EmulatorContext, req: IncomingMessage, sourceId: string): Principal {
  const principal = ctx.authenticate(req, [WRITE_SOURCES]);
  refuseDataProvider(principal, 'use typed ingest');
  requireGrant(principal, sourceId);
  return principal;
}

export function authorizeRead(ctx: EmulatorContext, req: IncomingMessage, sourceId: string): Principal {
  const principal = ctx.authenticate(req, []);
  requireGrant(principal, sourceId);
  return principal;
}

export function authorizeMetadata(ctx: EmulatorContext, req: IncomingMessage, sourceId: string): Principal {
  const principal = ctx.authenticate(req, [WRITE_SOURCES]);
  refuseDataProvider(principal, 'change source metadata');
  requireGrant(principal, sourceId);
  return principal;
}
