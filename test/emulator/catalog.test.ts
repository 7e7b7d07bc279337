import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerAccessCatalogRoutes, type AccessCatalogItem } from '../../src/emulator/catalog/index.js';
import { startHarness, type Harness } from './tags-harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness((ctx) => registerAccessCatalogRoutes(ctx));
});
afterAll(() => h.close());

function walk(items: AccessCatalogItem[], visit: (i: AccessCatalogItem) => void): void {
  for (const item of items) {
    visit(item);
    walk(item.children, visit);
  }
}

describe('access catalog', () => {
  it('answers an array tree of items of the spec shape, scoped to the caller tenant', async () => {
    const tenant = `t-${randomUUID()}`;
    const res = await fetch(`${h.baseUrl}/v1/applications/access-catalog`, { headers: { 'x-test-tenant': tenant } });
    expect(res.status).toBe(200);
    const items = (await res.json()) as AccessCatalogItem[];
    expect(Array.isArray(items)).toBe(true);
    expect(items.some((i) => i.grantType === 'Group' && i.children.length > 0)).toBe(true);
    const keys: string[] = [];
    walk(items, (i) => {
      expect(Object.keys(i).sort()).toEqual(['audience', 'children', 'description', 'grantType', 'key', 'label', 'resourceId']);
      expect(i.audience).toBe(tenant);
      keys.push(i.key);
    });
    expect(keys).toEqual(expect.arrayContaining(['write:sources', 'import-datasource', 'read:events']));
  });

  it('requires a credential', async () => {
    expect((await fetch(`${h.baseUrl}/v1/applications/access-catalog`)).status).toBe(401);
  });

  it('serves a configured catalog', async () => {
    const custom = await (
      await import('./tags-harness.js')
    ).startHarness((ctx) =>
      registerAccessCatalogRoutes(ctx, {
        catalogFor: (tenant) => [{ key: 'only', grantType: 'Group', label: tenant, description: '', resourceId: 'r', audience: tenant, children: [] }],
      }),
    );
    try {
      const res = await fetch(`${custom.baseUrl}/v1/applications/access-catalog`, { headers: { 'x-test-tenant': 'acme' } });
      expect(await res.json()).toEqual([{ key: 'only', grantType: 'Group', label: 'acme', description: '', resourceId: 'r', audience: 'acme', children: [] }]);
    } finally {
      await custom.close();
    }
  });
});
