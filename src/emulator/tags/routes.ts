import type { EmulatorContext } from '../context.js';
import { readJson } from '../http/body.js';
import { HttpProblem } from '../http/problem.js';
import type * as z from 'zod';
import { issuesToErrors } from '../http/validation.js';
import type { OperationSpec } from '../openapi/operation.js';
import { answer, noContent, pathParameter, problem, validation } from '../openapi/responses.js';
import { pageTags, parseTagListQuery } from './list-query.js';
import { CardDefinitionSchema, ManagedTagPageSchema, ManagedTagSchema, NewCardDefinitionSchema, NewManagedTagSchema, TAG_LIST_QUERY } from './schemas.js';
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
 * Spec: List managed tags, Get a managed tag, Delete a managed tag; the emulator's seeding of managed
 * tags and card definitions. Required permissions are not shown in the spec: any valid credential
 * of the tenant is accepted (no particular scope).
 */
const tags = { tag: 'Managed tags', security: { kind: 'tenant', scopes: [] } } as const;
const tagId = { managedTagId: pathParameter('Managed tag ID (a UUID, compared case-insensitively).') };
const permission = 'Required permission is not shown by the spec: any valid credential of the tenant.';

const LIST: OperationSpec = {
  ...tags,
  method: 'GET',
  path: '/v1/managed-tags',
  operationId: 'listManagedTags',
  summary: 'List managed tags: filters combine with AND; ordered by ID; paged with `after`.',
  description: permission,
  query: TAG_LIST_QUERY,
  responses: {
    '200': answer('One page.', ManagedTagPageSchema),
    '400': validation('A bad filter, page size or cursor (a cursor of another filter set too); messages keyed by parameter.'),
  },
};

const GET: OperationSpec = {
  ...tags,
  method: 'GET',
  path: '/v1/managed-tags/{managedTagId}',
  operationId: 'getManagedTag',
  summary: 'Get a managed tag.',
  description: permission,
  pathParameters: tagId,
  responses: { '200': answer('The managed tag.', ManagedTagSchema), '404': problem('No such managed tag in the tenant.') },
};

const DELETE: OperationSpec = {
  ...tags,
  method: 'DELETE',
  path: '/v1/managed-tags/{managedTagId}',
  operationId: 'deleteManagedTag',
  summary: 'Delete a managed tag and its values; child tags are detached.',
  description: permission,
  pathParameters: tagId,
  responses: { '204': noContent('Deleted, or already absent.'), '409': problem('A card definition references the tag.') },
};

const seeding = {
  tag: 'Emulator only',
  security: { kind: 'none' },
  pathParameters: { tenant: pathParameter('Tenant ID (created when absent).', 'dev-tenant') },
} as const;

const SEED_TAG: OperationSpec = {
  ...seeding,
  method: 'POST',
  path: '/_emulator/tenants/{tenant}/managed-tags',
  operationId: 'seedManagedTag',
  summary: 'Create a managed tag (the spec gives no way to).',
  requestBody: { schema: NewManagedTagSchema, example: { displayName: 'Colour', type: 'Text' } },
  responses: {
    '201': answer('The managed tag.', ManagedTagSchema),
    '400': validation('Bad input, an id in use or an unknown parent; messages keyed by field.'),
  },
};

const SEED_CARD: OperationSpec = {
  ...seeding,
  method: 'POST',
  path: '/_emulator/tenants/{tenant}/card-definitions',
  operationId: 'seedCardDefinition',
  summary: 'Create a card definition referencing managed tags (a referenced tag cannot be deleted: 409).',
  requestBody: { schema: NewCardDefinitionSchema },
  responses: {
    '201': answer('The card definition.', CardDefinitionSchema),
    '400': validation('Bad input, an id in use or an unknown tag; messages keyed by field.'),
  },
};

export function registerManagedTagRoutes(ctx: EmulatorContext, deps: ManagedTagDeps = {}): ManagedTagsModule {
  const store = new ManagedTagStore(deps.now);

  ctx.router.add(LIST, ({ req, query }) => {
    const principal = ctx.authenticate(req, []);
    const q = parseTagListQuery(query);
    return { status: 200, body: pageTags(store.tenant(principal.tenant).sorted(), q) };
  });

  ctx.router.add(GET, ({ req, params }) => {
    const principal = ctx.authenticate(req, []);
    const tag = store.tenant(principal.tenant).get(params.managedTagId!);
    if (!tag) throw new HttpProblem(404, `Managed tag ${params.managedTagId} does not exist.`);
    return { status: 200, body: tag };
  });

  ctx.router.add(DELETE, ({ req, params }) => {
    const principal = ctx.authenticate(req, []);
    const outcome = store.tenant(principal.tenant).delete(params.managedTagId!);
    if (typeof outcome === 'object') {
      throw new HttpProblem(409, `Managed tag ${params.managedTagId} is referenced by card definition ${outcome.referencedBy}.`);
    }
    return { status: 204 };
  });

  ctx.router.add(SEED_TAG, async ({ req, params }) => {
    assertLoopback(req);
    const tenant = store.tenant(params.tenant!);
    // Every problem at once: the shape (zod) and references to the tenant's tags.
    const input = parseWithReferences(NewManagedTagSchema, await readJson(req, ctx.maxBodyBytes), (raw, bag) => {
      if (isUuid(raw.id) && tenant.get(raw.id)) bag.add('id', 'A managed tag with this id exists.');
      if (isUuid(raw.parentId) && !tenant.get(raw.parentId)) bag.add('parentId', 'No managed tag with this id in the tenant.');
    });
    const tag: NewManagedTag = { displayName: input.displayName, type: input.type };
    if (input.id !== undefined) tag.id = input.id;
    if (input.parentId != null) tag.parentId = input.parentId;
    if (input.createdAt !== undefined) tag.createdAt = new Date(input.createdAt).toISOString();
    if (input.lastModifiedAt !== undefined) tag.lastModifiedAt = new Date(input.lastModifiedAt).toISOString();
    return { status: 201, body: tenant.add(tag) };
  });

  ctx.router.add(SEED_CARD, async ({ req, params }) => {
    assertLoopback(req);
    const tenant = store.tenant(params.tenant!);
    const input = parseWithReferences(NewCardDefinitionSchema, await readJson(req, ctx.maxBodyBytes), (raw, bag) => {
      if (isUuid(raw.id) && tenant.cards.has(raw.id.toLowerCase())) bag.add('id', 'A card definition with this id exists.');
      if (Array.isArray(raw.managedTagIds)) {
        raw.managedTagIds.forEach((id, i) => {
          if (typeof id !== 'string' || !tenant.get(id)) bag.add(`managedTagIds[${i}]`, 'No managed tag with this id in the tenant.');
        });
      }
    });
    return { status: 201, body: tenant.addCard({ ...(input.id !== undefined ? { id: input.id } : {}), managedTagIds: input.managedTagIds }) };
  });

  return { store };
}

/** Parses `body` with `schema` and checks what the schema cannot (references), reporting every problem at once. */
function parseWithReferences<T extends z.ZodType>(schema: T, body: unknown, references: (raw: Record<string, unknown>, bag: ErrorBag) => void): z.output<T> {
  const parsed = schema.safeParse(body);
  const bag = new ErrorBag();
  if (!parsed.success)
    for (const [path, messages] of Object.entries(issuesToErrors(parsed.error.issues))) for (const message of messages) bag.add(path, message);
  if (isPlainObject(body)) references(body, bag);
  if (!bag.empty || !parsed.success) throw new HttpProblem(400, 'One or more validation errors occurred.', bag.errors);
  return parsed.data;
}
