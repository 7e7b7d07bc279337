import * as z from 'zod';
import type { AccessCatalogItem } from '../../types.js';
import type { EmulatorContext } from '../context.js';
import { component } from '../openapi/components.js';
import type { OperationSpec } from '../openapi/operation.js';
import { answer } from '../openapi/responses.js';

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

/** Spec: Application access catalog item, a tree through `children`. */
const AccessCatalogItemSchema: z.ZodType<AccessCatalogItem> = component(
  'AccessCatalogItem',
  z.strictObject({
    key: z.string(),
    grantType: z.string().meta({ description: "`Group` (the one value the spec shows); the emulator's leaves are `Scope`.", examples: ['Group'] }),
    label: z.string(),
    description: z.string(),
    resourceId: z.string(),
    audience: z.string(),
    get children(): z.ZodArray<typeof AccessCatalogItemSchema> {
      return z.array(AccessCatalogItemSchema);
    },
  }),
);

const AccessCatalog = component('AccessCatalog', z.array(AccessCatalogItemSchema));

const CATALOG: OperationSpec = {
  method: 'GET',
  path: '/v1/applications/access-catalog',
  operationId: 'getAccessCatalog',
  summary: 'Discover the access options that can be granted to an application.',
  description: 'Required permission is not shown by the spec: any valid credential of the tenant.',
  tag: 'Access catalog',
  security: { kind: 'tenant', scopes: [] },
  responses: { '200': answer('The tree of access options.', AccessCatalog) },
};

/**
 * Spec: Discover application access options, `GET /v1/applications/access-catalog`, no parameters,
 * `200` an array of items. Required permission is not shown: any valid credential of the tenant.
 */
export function registerAccessCatalogRoutes(ctx: EmulatorContext, deps: AccessCatalogDeps = {}): void {
  const catalogFor = deps.catalogFor ?? defaultAccessCatalog;
  ctx.router.add(CATALOG, ({ req }) => {
    const principal = ctx.authenticate(req, []);
    return { status: 200, body: catalogFor(principal.tenant) };
  });
}
