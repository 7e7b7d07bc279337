import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../src/errors.js';
import { createClient, type LegacyImportRequest, type ManagedTag } from '../../src/client/index.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { newTenantApp, seed, type TenantApp } from './platform-helpers.js';

/** PlatformClient's managed tags, access catalog and legacy import against the real emulator over HTTP. */
let emulator: RunningEmulator;
const apps: TenantApp[] = [];

beforeAll(async () => {
  emulator = await startEmulator({ port: 0 });
});
afterAll(async () => {
  await Promise.all(apps.map((app) => app.client.close()));
  await emulator?.close();
});

async function app(options?: Parameters<typeof newTenantApp>[1]): Promise<TenantApp> {
  const created = await newTenantApp(emulator, options);
  apps.push(created);
  return created;
}

function seedTag(tenant: string, body: Record<string, unknown>): Promise<ManagedTag> {
  return seed<ManagedTag>(emulator, `/_emulator/tenants/${tenant}/managed-tags`, body);
}

describe('managed tags', () => {
  it('list: the async iterator follows the after cursor over every page, in ID order', async () => {
    const { tenant, client } = await app();
    const seeded = await Promise.all(Array.from({ length: 7 }, (_, i) => seedTag(tenant, { displayName: `Tag ${i}`, type: 'Text' })));
    const pages = [];
    for await (const page of client.managedTags.pages({}, { pageSize: 3 })) pages.push(page);
    expect(pages.map((p) => p.items.length)).toEqual([3, 3, 1]);
    expect(pages.every((p) => p.totalCount === 7)).toBe(true);
    expect(pages[2]!.after).toBeUndefined();
    const all: ManagedTag[] = [];
    for await (const tag of client.managedTags.list({}, { pageSize: 2 })) all.push(tag);
    expect(all.map((t) => t.id)).toEqual(seeded.map((t) => t.id).sort());
  });

  it('list: name (case-insensitive containment), type and parentId combine with AND', async () => {
    const { tenant, client } = await app();
    const parent = await seedTag(tenant, { displayName: 'Colours', type: 'Text' });
    const red = await seedTag(tenant, { displayName: 'Dark RED', type: 'Text', parentId: parent.id });
    await seedTag(tenant, { displayName: 'red wine', type: 'LocalizedText', parentId: parent.id });
    await seedTag(tenant, { displayName: 'Redwood', type: 'Text' });
    const page = await client.managedTags.listPage({ name: 'red', type: 'Text', parentId: parent.id });
    expect(page.items.map((t) => t.id)).toEqual([red.id]);
    expect(page.totalCount).toBe(1);
  });

  it('list: created and updated ranges are inclusive and accept Dates', async () => {
    const { tenant, client } = await app();
    const at = (day: number) => `2024-03-${String(day).padStart(2, '0')}T10:00:00.000Z`;
    const tags = [];
    for (const day of [1, 2, 3, 4])
      tags.push(await seedTag(tenant, { displayName: `d${day}`, type: 'Text', createdAt: at(day), lastModifiedAt: at(day + 10) }));
    const created = await client.managedTags.listPage({ createdFrom: new Date(at(2)), createdTo: at(3) });
    expect(created.items.map((t) => t.displayName).sort()).toEqual(['d2', 'd3']);
    const updated = await client.managedTags.listPage({ updatedFrom: at(14), updatedTo: new Date(at(14)) });
    expect(updated.items.map((t) => t.displayName)).toEqual(['d4']);
  });

  it('list: a cursor used with a changed filter set is refused (400 naming after)', async () => {
    const { tenant, client } = await app();
    for (let i = 0; i < 3; i++) await seedTag(tenant, { displayName: `x${i}`, type: 'Text' });
    const first = await client.managedTags.listPage({ name: 'x' }, { pageSize: 1 });
    expect(first.after).toBeDefined();
    const err = await client.managedTags.listPage({ name: 'x1' }, { pageSize: 1, after: first.after! }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: ErrorCodes.API, status: 400 });
    expect(Object.keys((err as { problem: { errors: object } }).problem.errors)).toContain('after');
  });

  it('list: a page size outside 1..500 is refused before sending', async () => {
    const { client } = await app();
    await expect(client.managedTags.listPage({}, { pageSize: 0 })).rejects.toThrow(RangeError);
    await expect(client.managedTags.listPage({}, { pageSize: 501 })).rejects.toThrow(/1\.\.500/);
  });

  it('get returns one tag; an unknown id is ApiError 404', async () => {
    const { tenant, client } = await app();
    const tag = await seedTag(tenant, { displayName: 'Size', type: 'LocalizedText' });
    await expect(client.managedTags.get(tag.id)).resolves.toEqual(tag);
    await expect(client.managedTags.get(randomUUID())).rejects.toMatchObject({ status: 404 });
  });

  it('delete answers 204, also for an absent tag, and detaches the children', async () => {
    const { tenant, client } = await app();
    const parent = await seedTag(tenant, { displayName: 'Parent', type: 'Text' });
    const child = await seedTag(tenant, { displayName: 'Child', type: 'Text', parentId: parent.id });
    await expect(client.managedTags.delete(parent.id)).resolves.toBeUndefined();
    await expect(client.managedTags.delete(parent.id)).resolves.toBeUndefined();
    await expect(client.managedTags.get(parent.id)).rejects.toMatchObject({ status: 404 });
    expect((await client.managedTags.get(child.id)).parentId).toBeNull();
  });

  it('delete of a tag referenced by a card definition is ApiError 409', async () => {
    const { tenant, client } = await app();
    const tag = await seedTag(tenant, { displayName: 'Kept', type: 'Text' });
    await seed(emulator, `/_emulator/tenants/${tenant}/card-definitions`, { managedTagIds: [tag.id] });
    await expect(client.managedTags.delete(tag.id)).rejects.toMatchObject({ code: ErrorCodes.API, status: 409 });
    await expect(client.managedTags.get(tag.id)).resolves.toMatchObject({ id: tag.id });
  });

  it('tags are tenant-scoped: another tenant does not see them', async () => {
    const a = await app();
    const b = await app();
    const tag = await seedTag(a.tenant, { displayName: 'Private', type: 'Text' });
    await expect(b.client.managedTags.get(tag.id)).rejects.toMatchObject({ status: 404 });
    expect((await b.client.managedTags.listPage()).totalCount).toBe(0);
  });
});

describe('access catalog', () => {
  it('returns the tree of access options with children', async () => {
    const { tenant, client } = await app();
    const catalog = await client.getAccessCatalog();
    const groups = catalog.filter((item) => item.grantType === 'Group');
    expect(groups.length).toBeGreaterThan(0);
    const scopes = catalog.flatMap((item) => item.children.map((child) => child.key));
    expect(scopes).toEqual(expect.arrayContaining(['write:sources', 'read:events']));
    for (const item of catalog)
      expect(item).toMatchObject({ audience: tenant, key: expect.any(String), label: expect.any(String), children: expect.any(Array) });
  });

  it('comes from the emulator config when it defines accessCatalog', async () => {
    const configured = await startEmulator({
      port: 0,
      config: {
        accessCatalog: [
          { key: 'analytics', grantType: 'Group', label: 'Analytics', children: [{ key: 'read:reports', grantType: 'Scope', label: 'Reports' }] },
        ],
      },
    });
    const client = createClient({ baseUrl: configured.url, tenant: 'dev-tenant', clientId: 'dev-client', clientSecret: 'dev-secret' });
    try {
      const catalog = await client.getAccessCatalog();
      expect(catalog).toEqual([
        {
          key: 'analytics',
          grantType: 'Group',
          label: 'Analytics',
          description: '',
          resourceId: '',
          audience: '',
          children: [{ key: 'read:reports', grantType: 'Scope', label: 'Reports', description: '', resourceId: '', audience: '', children: [] }],
        },
      ]);
    } finally {
      await client.close();
      await configured.close();
    }
  });
});

describe('legacy import', () => {
  const body: LegacyImportRequest = {
    entries: [
      { id: 'L1', properties: { Title: 'Shirt', color: 'red' } },
      { id: 'L2', properties: { title: 'Hat', color: null } },
    ],
  };

  it('verify validates without queueing: nothing becomes readable', async () => {
    const { client } = await app();
    const source = `src-${randomUUID()}`;
    await expect(client.legacyImport.verify(source, body)).resolves.toEqual({ dataSource: source, valid: true, entryCount: 2 });
    await emulator.idle();
    await expect(client.getEntries(source, ['L1'])).rejects.toMatchObject({ status: 404 });
  });

  it('import answers 202 and the entries become readable with their string values', async () => {
    const { client } = await app();
    const source = `src-${randomUUID()}`;
    const accepted = await client.legacyImport.import(source, body);
    expect(accepted).toMatchObject({ dataSource: source, acceptedEntryCount: 2, correlationId: expect.stringMatching(/^[0-9a-f-]{36}$/) });
    await emulator.idle();
    const entry = await client.getEntry(source, 'L1');
    expect(entry.properties.map((p) => [p.id, p.value]).sort()).toEqual([
      ['color', 'red'],
      ['title', 'Shirt'],
    ]);
  });

  it('an invalid request is ApiError 400 with errors keyed by request path', async () => {
    const { client } = await app();
    const bad = { entries: [{ id: 'x', properties: { n: 5 } }] } as unknown as typeof body;
    const err = await client.legacyImport.verify(`src-${randomUUID()}`, bad).catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 400 });
    expect((err as { problem: { errors: Record<string, string[]> } }).problem.errors).toHaveProperty(['entries[0].properties.n']);
  });

  it('accepts import-datasource alone as well as write:sources alone', async () => {
    const importer = await app({ scopes: ['import-datasource'] });
    const writer = await app({ scopes: ['write:sources'] });
    await expect(importer.client.legacyImport.import(`s-${randomUUID()}`, body)).resolves.toMatchObject({ acceptedEntryCount: 2 });
    await expect(writer.client.legacyImport.import(`s-${randomUUID()}`, body)).resolves.toMatchObject({ acceptedEntryCount: 2 });
    const eventsOnly = await app({ scopes: ['read:events'] });
    await expect(eventsOnly.client.legacyImport.verify('s', body)).rejects.toMatchObject({ status: 403 });
  });

  it('a data-provider credential reaches only its assigned sources', async () => {
    const provider = await app({ scopes: ['import-datasource'], sources: ['assigned'], dataProvider: true });
    await expect(provider.client.legacyImport.import('assigned', body)).resolves.toMatchObject({ dataSource: 'assigned' });
    await expect(provider.client.legacyImport.import('other', body)).rejects.toMatchObject({ status: 403 });
  });
});
