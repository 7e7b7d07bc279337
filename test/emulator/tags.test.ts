import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerManagedTagRoutes } from '../../src/emulator/tags/index.js';
import { startHarness, type Harness } from './tags-harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness((ctx) => registerManagedTagRoutes(ctx));
});
afterAll(() => h.close());

interface Tag {
  id: string;
  displayName: string;
  type: string;
  parentId: string | null;
  createdAt: string;
  lastModifiedAt: string;
  createdBy: string;
  updatedBy: string;
}

async function seedTag(tenant: string, body: Record<string, unknown>): Promise<Tag> {
  const res = await fetch(`${h.baseUrl}/_emulator/tenants/${tenant}/managed-tags`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(res.status).toBe(201);
  return (await res.json()) as Tag;
}

async function seedCard(tenant: string, managedTagIds: string[]): Promise<Response> {
  return fetch(`${h.baseUrl}/_emulator/tenants/${tenant}/card-definitions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ managedTagIds }),
  });
}

function api(tenant: string, path: string, init: RequestInit = {}): Promise<Response> {
  return fetch(`${h.baseUrl}${path}`, { ...init, headers: { 'x-test-tenant': tenant } });
}

async function list(tenant: string, params: Record<string, string>): Promise<{ status: number; body: any }> {
  const res = await api(tenant, `/v1/managed-tags?${new URLSearchParams(params)}`);
  return { status: res.status, body: await res.json() };
}

const tenantName = () => `t-${randomUUID()}`;

describe('managed tags', () => {
  it('seeding returns the full tag with uuid id, authors and timestamps', async () => {
    const tenant = tenantName();
    const tag = await seedTag(tenant, { displayName: 'Colour', type: 'Text' });
    expect(tag.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(tag.createdBy).toMatch(/^[0-9a-f-]{36}$/);
    expect(tag.updatedBy).toMatch(/^[0-9a-f-]{36}$/);
    expect(Date.parse(tag.createdAt)).not.toBeNaN();
    expect(tag.parentId).toBeNull();
    const got = await api(tenant, `/v1/managed-tags/${tag.id}`);
    expect(got.status).toBe(200);
    expect(await got.json()).toEqual(tag);
  });

  it('seeding rejects bad input with errors keyed by path', async () => {
    const res = await fetch(`${h.baseUrl}/_emulator/tenants/${tenantName()}/managed-tags`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ displayName: '', type: 'Number', parentId: randomUUID() }),
    });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    const problem = (await res.json()) as { errors: Record<string, string[]> };
    expect(Object.keys(problem.errors).sort()).toEqual(['displayName', 'parentId', 'type']);
  });

  it('tags are tenant-scoped: another tenant neither lists nor reads them', async () => {
    const a = tenantName();
    const tag = await seedTag(a, { displayName: 'Size', type: 'Text' });
    expect((await api(tenantName(), `/v1/managed-tags/${tag.id}`)).status).toBe(404);
    expect((await list(tenantName(), {})).body.totalCount).toBe(0);
    expect((await list(a, {})).body.totalCount).toBe(1);
  });

  it('get of an absent tag is a 404 problem', async () => {
    const res = await api(tenantName(), `/v1/managed-tags/${randomUUID()}`);
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
  });

  it('list requires a credential', async () => {
    const res = await fetch(`${h.baseUrl}/v1/managed-tags`);
    expect(res.status).toBe(401);
  });

  it('list combines every filter with AND, name case-insensitive, dates inclusive', async () => {
    const tenant = tenantName();
    const parent = await seedTag(tenant, { displayName: 'Root', type: 'Text', createdAt: '2024-01-01T00:00:00Z' });
    const match = await seedTag(tenant, {
      displayName: 'Dark BLUE',
      type: 'LocalizedText',
      parentId: parent.id,
      createdAt: '2024-02-01T00:00:00Z',
      lastModifiedAt: '2024-03-01T00:00:00Z',
    });
    await seedTag(tenant, { displayName: 'blue', type: 'Text', parentId: parent.id, createdAt: '2024-02-01T00:00:00Z' });
    await seedTag(tenant, { displayName: 'light blue', type: 'LocalizedText', createdAt: '2024-02-01T00:00:00Z' });
    await seedTag(tenant, { displayName: 'blue old', type: 'LocalizedText', parentId: parent.id, createdAt: '2023-02-01T00:00:00Z' });
    const { status, body } = await list(tenant, {
      name: 'blue',
      type: 'LocalizedText',
      parentId: parent.id,
      createdFrom: '2024-02-01T00:00:00Z',
      createdTo: '2024-02-01T00:00:00Z',
      updatedFrom: '2024-03-01T00:00:00Z',
      updatedTo: '2024-03-01T00:00:00Z',
    });
    expect(status).toBe(200);
    expect(body.items.map((t: Tag) => t.id)).toEqual([match.id]);
    expect(body.totalCount).toBe(1);
    expect(body.after).toBeUndefined();
    expect((await list(tenant, { name: 'BLUE' })).body.totalCount).toBe(4);
    expect((await list(tenant, { updatedTo: '2024-02-28T00:00:00Z', name: 'blue' })).body.totalCount).toBe(3);
  });

  it('list pages in ID order with an after cursor and a totalCount', async () => {
    const tenant = tenantName();
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) ids.push((await seedTag(tenant, { displayName: `tag ${i}`, type: 'Text' })).id);
    ids.sort();
    const seen: string[] = [];
    let after: string | undefined;
    let pages = 0;
    do {
      const { status, body } = await list(tenant, { name: 'tag', limit: '3', ...(after ? { after } : {}) });
      expect(status).toBe(200);
      expect(body.totalCount).toBe(7);
      seen.push(...body.items.map((t: Tag) => t.id));
      after = body.after;
      pages++;
    } while (after);
    expect(pages).toBe(3);
    expect(seen).toEqual(ids);
  });

  it('a cursor followed with a changed filter set is refused with 400', async () => {
    const tenant = tenantName();
    for (let i = 0; i < 3; i++) await seedTag(tenant, { displayName: `x${i}`, type: 'Text' });
    const first = await list(tenant, { name: 'x', limit: '1' });
    expect(first.body.after).toEqual(expect.any(String));
    const changed = await list(tenant, { name: 'x1', limit: '1', after: first.body.after });
    expect(changed.status).toBe(400);
    expect(changed.body.errors.after).toHaveLength(1);
    const kept = await list(tenant, { name: 'x', limit: '2', after: first.body.after });
    expect(kept.status).toBe(200);
    expect(kept.body.items).toHaveLength(2);
  });

  it('list rejects a bad type, date, parentId, limit or cursor', async () => {
    const { status, body } = await list(tenantName(), {
      type: 'Number',
      createdFrom: 'yesterday',
      parentId: 'nope',
      limit: '501',
      after: 'garbage',
    });
    expect(status).toBe(400);
    expect(Object.keys(body.errors).sort()).toEqual(['after', 'createdFrom', 'limit', 'parentId', 'type']);
  });

  it('the default page size is 50', async () => {
    const tenant = tenantName();
    for (let i = 0; i < 51; i++) await seedTag(tenant, { displayName: `n${i}`, type: 'Text' });
    const { body } = await list(tenant, {});
    expect(body.items).toHaveLength(50);
    expect(body.totalCount).toBe(51);
    expect(body.after).toEqual(expect.any(String));
  });

  it('delete answers 204, and 204 again when the tag is already absent', async () => {
    const tenant = tenantName();
    const tag = await seedTag(tenant, { displayName: 'gone', type: 'Text' });
    const first = await api(tenant, `/v1/managed-tags/${tag.id}`, { method: 'DELETE' });
    expect(first.status).toBe(204);
    expect(await first.text()).toBe('');
    expect((await api(tenant, `/v1/managed-tags/${tag.id}`)).status).toBe(404);
    expect((await api(tenant, `/v1/managed-tags/${tag.id}`, { method: 'DELETE' })).status).toBe(204);
  });

  it('delete answers 409 while a card definition references the tag', async () => {
    const tenant = tenantName();
    const tag = await seedTag(tenant, { displayName: 'used', type: 'Text' });
    const card = await seedCard(tenant, [tag.id]);
    expect(card.status).toBe(201);
    expect(await card.json()).toEqual({ id: expect.any(String), managedTagIds: [tag.id] });
    const res = await api(tenant, `/v1/managed-tags/${tag.id}`, { method: 'DELETE' });
    expect(res.status).toBe(409);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect((await api(tenant, `/v1/managed-tags/${tag.id}`)).status).toBe(200);
  });

  it('a card definition naming an unknown tag is refused', async () => {
    const res = await seedCard(tenantName(), [randomUUID()]);
    expect(res.status).toBe(400);
    expect(Object.keys(((await res.json()) as any).errors)).toEqual(['managedTagIds[0]']);
  });

  it('delete detaches the child tags (parentId cleared)', async () => {
    const tenant = tenantName();
    const parent = await seedTag(tenant, { displayName: 'parent', type: 'Text' });
    const child = await seedTag(tenant, { displayName: 'child', type: 'Text', parentId: parent.id });
    expect((await api(tenant, `/v1/managed-tags/${parent.id}`, { method: 'DELETE' })).status).toBe(204);
    const got = (await (await api(tenant, `/v1/managed-tags/${child.id}`)).json()) as Tag;
    expect(got.parentId).toBeNull();
    expect((await list(tenant, { parentId: parent.id })).body.totalCount).toBe(0);
  });
});

describe('seeding is loopback-only', () => {
  it('recognises loopback addresses and refuses others', async () => {
    const { isLoopbackAddress } = await import('../../src/emulator/tags/seeding.js');
    expect(isLoopbackAddress('127.0.0.1')).toBe(true);
    expect(isLoopbackAddress('::ffff:127.0.0.5')).toBe(true);
    expect(isLoopbackAddress('::1')).toBe(true);
    expect(isLoopbackAddress('10.0.0.1')).toBe(false);
    expect(isLoopbackAddress('::ffff:192.168.1.2')).toBe(false);
    expect(isLoopbackAddress(undefined)).toBe(false);
  });
});
