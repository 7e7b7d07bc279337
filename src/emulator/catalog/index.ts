import type { AccessCatalogItem } from '../../types.js';
import type { EmulatorContext } from '../context.js';

export type { AccessCatalogItem };

export interface AccessCatalogDeps {
  /**
   * The catalog of a tenant. Default: `defaultAccessCatalog(tenant)`, the options the emulator
   * itself can grant (the scopes of spec Authentication rule 7).
   */
  catalogFor?: (tenant: string) => AccessCatalogItem[];
}

const PUBLIC_API_RESOURCE = 'data-platform-api';

function scope(tenant: string, key: string, label: string, description: string): AccessCatalogItem {
  return { key, grantType: 'Scope', label, description, resourceId: PUBLIC_API_RESOURCE, audience: tenant, children: [] };
}

/**
 * A plausible default tree: one Group per capability area, its scopes as children. The audience
 * of tenant API scopes is the tenant ID (spec: Issue a machine access token, audience choices).
 */
export function defaultAccessCatalog(tenant: string): AccessCatalogItem[] {
  return [
    {
      key: 'sources',
      grantType: 'Group',
      label: 'Sources',
      description: 'Ingest data into sources.',
      resourceId: PUBLIC_API_RESOURCE,
      audience: tenant,
      children: [
        scope(tenant, 'write:sources', 'Write sources', 'Typed ingest and legacy import into the granted sources.'),
        scope(tenant, 'import-datasource', 'Legacy import', 'Legacy import operations of a data provider.'),
      ],
    },
    {
      key: 'events',
      grantType: 'Group',
      label: 'Events',
      description: 'Consume platform events.',
      resourceId: PUBLIC_API_RESOURCE,
      audience: tenant,
      children: [
        scope(tenant, 'read:events', 'Read events', 'Every events transport.'),
        scope(tenant, 'read:events:pull', 'Pull events', 'Pull events and inspect metadata.'),
        scope(tenant, 'read:events:sse', 'Stream events', 'Stream events over server-sent events.'),
      ],
    },
  ];
}

/**
 * Spec: Discover application access options, `GET /v1/applications/access-catalog`, no parameters,
 * `200` an array of items. Required permission is not shown: any valid credential of the tenant.
 */
export function registerAccessCatalogRoutes(ctx: EmulatorContext, deps: AccessCatalogDeps = {}): void {
  const catalogFor = deps.catalogFor ?? defaultAccessCatalog;
  ctx.router.add('GET', '/v1/applications/access-catalog', ({ req }) => {
    const principal = ctx.authenticate(req, []);
    return { status: 200, body: catalogFor(principal.tenant) };
  });
}
