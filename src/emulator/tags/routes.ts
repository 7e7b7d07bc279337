import type { EmulatorContext } from '../context.js';
import { readJson } from '../http/body.js';
import { HttpProblem } from '../http/problem.js';
import { pageTags, parseTagListQuery } from './list-query.js';
import { assertLoopback, ErrorBag, isPlainObject, isUuid } from './seeding.js';
import { ManagedTagStore, type NewManagedTag } from './store.js';

export interface ManagedTagDeps {
  /** Clock of createdAt/lastModifiedAt. Default `new Date()`. */
  now?: () => Date;
}

export interface ManagedTagsModule {
  store: ManagedTagStore;
}

/**
 * Spec: List managed tags, Get a managed tag, Delete a managed tag; CONTRACT seeding of managed
 * tags and card definitions. Required permissions are not shown in the spec: any valid credential
 * of the tenant is accepted (no particular scope).
 */
export function registerManagedTagRoutes(ctx: EmulatorContext, deps: ManagedTagDeps = {}): ManagedTagsModule {
  const store = new ManagedTagStore(deps.now);

  ctx.router.add('GET', '/v1/managed-tags', ({ req, query }) => {
    const principal = ctx.authenticate(req, []);
    const q = parseTagListQuery(query);
    return { status: 200, body: pageTags(store.tenant(principal.tenant).sorted(), q) };
  });

  ctx.router.add('GET', '/v1/managed-tags/:id', ({ req, params }) => {
    const principal = ctx.authenticate(req, []);
    const tag = store.tenant(principal.tenant).get(params.id!);
    if (!tag) throw new HttpProblem(404, `Managed tag ${params.id} does not exist.`);
    return { status: 200, body: tag };
  });

  ctx.router.add('DELETE', '/v1/managed-tags/:id', ({ req, params }) => {
    const principal = ctx.authenticate(req, []);
    const outcome = store.tenant(principal.tenant).delete(params.id!);
    if (typeof outcome === 'object') {
      throw new HttpProblem(409, `Managed tag ${params.id} is referenced by card definition ${outcome.referencedBy}.`);
    }
    return { status: 204 };
  });

  ctx.router.add('POST', '/_emulator/tenants/:tenant/managed-tags', async ({ req, params }) => {
    assertLoopback(req);
    const body = await readJson(req, ctx.maxBodyBytes);
    const tenant = store.tenant(params.tenant!);
    const input = parseNewTag(body, (id) => tenant.get(id) !== undefined);
    return { status: 201, body: tenant.add(input) };
  });

  ctx.router.add('POST', '/_emulator/tenants/:tenant/card-definitions', async ({ req, params }) => {
    assertLoopback(req);
    const body = await readJson(req, ctx.maxBodyBytes);
    const tenant = store.tenant(params.tenant!);
    const bag = new ErrorBag();
    if (!isPlainObject(body)) throw new HttpProblem(400, 'The body must be a JSON object.', { $: ['Expected an object.'] });
    if (body.id !== undefined && !isUuid(body.id)) bag.add('id', 'id must be a UUID.');
    else if (typeof body.id === 'string' && tenant.cards.has(body.id.toLowerCase())) bag.add('id', 'A card definition with this id exists.');
    const ids = body.managedTagIds;
    if (!Array.isArray(ids)) bag.add('managedTagIds', 'managedTagIds must be an array of managed tag ids.');
    else {
      ids.forEach((id, i) => {
        if (typeof id !== 'string' || !tenant.get(id)) bag.add(`managedTagIds[${i}]`, 'No managed tag with this id in the tenant.');
      });
    }
    if (!bag.empty) throw new HttpProblem(400, 'One or more validation errors occurred.', bag.errors);
    const card = tenant.addCard({ ...(typeof body.id === 'string' ? { id: body.id } : {}), managedTagIds: ids as string[] });
    return { status: 201, body: card };
  });

  return { store };
}

function parseNewTag(body: unknown, exists: (id: string) => boolean): NewManagedTag {
  if (!isPlainObject(body)) throw new HttpProblem(400, 'The body must be a JSON object.', { $: ['Expected an object.'] });
  const bag = new ErrorBag();
  if (body.id !== undefined) {
    if (!isUuid(body.id)) bag.add('id', 'id must be a UUID.');
    else if (exists(body.id)) bag.add('id', 'A managed tag with this id exists.');
  }
  if (typeof body.displayName !== 'string' || body.displayName.trim() === '') bag.add('displayName', 'displayName is required.');
  if (body.type !== 'Text' && body.type !== 'LocalizedText') bag.add('type', 'type must be Text or LocalizedText.');
  if (body.parentId !== undefined && body.parentId !== null) {
    if (!isUuid(body.parentId)) bag.add('parentId', 'parentId must be a UUID.');
    else if (!exists(body.parentId)) bag.add('parentId', 'No managed tag with this id in the tenant.');
  }
  // Not in the CONTRACT body, accepted so tests can seed tags at chosen times for the date filters.
  for (const key of ['createdAt', 'lastModifiedAt'] as const) {
    const v = body[key];
    if (v !== undefined && (typeof v !== 'string' || Number.isNaN(Date.parse(v)))) bag.add(key, `${key} must be an ISO 8601 timestamp.`);
  }
  if (!bag.empty) throw new HttpProblem(400, 'One or more validation errors occurred.', bag.errors);
  const tag: NewManagedTag = { displayName: body.displayName as string, type: body.type as NewManagedTag['type'] };
  if (typeof body.id === 'string') tag.id = body.id;
  if (typeof body.parentId === 'string') tag.parentId = body.parentId;
  if (typeof body.createdAt === 'string') tag.createdAt = new Date(body.createdAt).toISOString();
  if (typeof body.lastModifiedAt === 'string') tag.lastModifiedAt = new Date(body.lastModifiedAt).toISOString();
  return tag;
}
