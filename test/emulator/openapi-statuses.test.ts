import { once } from 'node:events';
import { IncomingMessage, ServerResponse } from 'node:http';
import { Duplex } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FaultInjector } from '../../src/emulator/faults/injector.js';
import { Router } from '../../src/emulator/http/router.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { operationResponses } from '../../src/emulator/openapi/document.js';
import type { OperationSpec } from '../../src/emulator/openapi/operation.js';
import { createEmulatorServer } from '../../src/emulator/server.js';
import { emulatorOperations } from '../../src/emulator/start.js';
import { call, tokenFor, type Answer } from './helpers.js';

/**
 * The description says what the emulator does: every status an operation declares is one the
 * emulator answers. Each (operation, status) pair of the whole-API description has a scenario here
 * that makes the emulator answer it; the table must list exactly the declared pairs. (The other
 * direction, every answer's status is declared, is the suite's response check: test/setup.)
 */

type Scenario = () => Promise<number>;

let em: RunningEmulator;
/** Sources are not created on first ingest here (config), so an unknown source is a 404. */
let strict: RunningEmulator;
let auth: Record<string, string>;
let strictAuth: Record<string, string>;
/** A credential of the tenant holding only `read:events:sse`: every scoped operation refuses it. */
let unscoped: Record<string, string>;
/** A credential granted only the source `granted`. */
let narrow: Record<string, string>;
let tagId: string;
let usedTagId: string;
let leaseId: string;
let destinationToken: string;

const SOURCE = 'coverage';
const json = (body: unknown) => ({ 'content-type': 'application/json', body: JSON.stringify(body) });

async function status(method: string, path: string, headers: Record<string, string> = {}, body?: unknown, on: RunningEmulator = em): Promise<number> {
  const { 'content-type': type, body: text } =
    body === undefined ? { 'content-type': undefined, body: undefined } : typeof body === 'string' ? { 'content-type': 'application/json', body } : json(body);
  const answer: Answer = await call(method as 'GET', `${on.url}${path}`, {
    headers: { ...(type ? { 'content-type': type } : {}), ...headers },
    ...(text !== undefined ? { body: text } : {}),
  });
  return answer.status;
}

async function application(clientId: string, scopes: string[], sources: string[] | 'all' = 'all'): Promise<Record<string, string>> {
  expect((await call('POST', `${em.url}/_emulator/applications`, { json: { clientId, clientSecret: 'secret', scopes, sources } })).status).toBe(201);
  const token = await tokenFor(em.url, { client_id: clientId, client_secret: 'secret' });
  return { authorization: `Bearer ${token.body.access_token}` };
}

beforeAll(async () => {
  em = await startEmulator({ port: 0, maxBodyBytes: 4096, logger: pino({ level: 'silent' }) });
  strict = await startEmulator({ port: 0, config: { autoCreateSources: false }, logger: pino({ level: 'silent' }) });
  auth = { authorization: `Bearer ${(await tokenFor(em.url)).body.access_token}` };
  strictAuth = { authorization: `Bearer ${(await tokenFor(strict.url)).body.access_token}` };
  unscoped = await application('coverage-sse', ['read:events:sse']);
  narrow = await application('coverage-narrow', ['write:sources', 'read:events'], ['granted']);
  expect(await status('POST', `/sources/${SOURCE}`, auth, { entries: [{ id: 'e1', properties: [{ id: 'n', value: 1 }] }] })).toBe(202);
  await em.idle();
  tagId = (await call<{ id: string }>('POST', `${em.url}/_emulator/tenants/dev-tenant/managed-tags`, { json: { displayName: 'Colour', type: 'Text' } })).body
    .id;
  usedTagId = (await call<{ id: string }>('POST', `${em.url}/_emulator/tenants/dev-tenant/managed-tags`, { json: { displayName: 'Size', type: 'Text' } })).body
    .id;
  expect((await call('POST', `${em.url}/_emulator/tenants/dev-tenant/card-definitions`, { json: { managedTagIds: [usedTagId] } })).status).toBe(201);
  for (const seed of [
    { customer: 'acme', destination: 'open', sourceId: SOURCE, endpoints: [{ name: 'items' }] },
    { customer: 'acme', destination: 'closed', protected: true, sourceId: SOURCE, endpoints: [{ name: 'items' }] },
    { customer: 'other', destination: 'closed', sourceId: SOURCE, endpoints: [{ name: 'items' }] },
    { customer: 'elsewhere', destination: 'foreign', tenant: 'other-tenant', sourceId: SOURCE, endpoints: [{ name: 'items' }] },
  ]) {
    expect((await call('POST', `${em.url}/_emulator/destinations`, { json: seed })).status).toBe(201);
  }
  destinationToken = (
    await call<{ accessToken: string }>('POST', `${em.url}/destinations/open/token`, { json: { clientId: 'dev-client', clientSecret: 'dev-secret' } })
  ).body.accessToken;
  em.appendEvents('dev-tenant', [{ type: 'coverage.event', subject: 's', data: {} }]);
  leaseId = (await call<{ leaseId: string }>('POST', `${em.url}/v1/event-destinations/dev-consumer/pull?workerId=coverage`, { headers: auth })).body.leaseId;
});
afterAll(async () => {
  await em?.close();
  await strict?.close();
});

/** A request from an address that is not loopback (192.0.2.1, documentation range), injected without any network. */
async function fromElsewhere(method: string, path: string): Promise<number> {
  const router = new Router();
  for (const operation of emulatorOperations()) router.add(operation, () => ({ status: 500 }));
  const server = createEmulatorServer({ router, faults: new FaultInjector(), logger: pino({ level: 'silent' }) });
  const socket = Object.assign(
    new Duplex({
      read() {},
      write(_chunk, _encoding, done) {
        done();
      },
    }),
    { remoteAddress: '192.0.2.1' },
  );
  const req = new IncomingMessage(socket as never);
  Object.assign(req, { method, url: path, headers: {} });
  req.push(null);
  const res = new ServerResponse(req);
  res.assignSocket(socket as never);
  server.emit('request', req, res);
  await once(res, 'finish');
  return res.statusCode;
}

async function withFaults(faults: object, scenario: Scenario): Promise<number> {
  em.faults.set(faults);
  try {
    return await scenario();
  } finally {
    em.faults.clear();
  }
}

/** A request to the operation's path that reaches its handler (credentials, existing resources). */
const concrete: Record<string, { path: string; headers?: () => Record<string, string>; body?: unknown }> = {
  authorize: { path: '/oauth2/auth' },
  issueToken: { path: '/oauth2/token' },
  pullBatch: { path: '/v1/event-destinations/dev-consumer/pull', headers: () => auth },
  acknowledgeBatch: { path: '/v1/event-destinations/dev-consumer/acknowledge', headers: () => auth, body: { leaseId: 'x', generation: 1, status: 'ok' } },
  pauseDestination: { path: '/v1/event-destinations/dev-consumer/pause', headers: () => auth },
  resumeDestination: { path: '/v1/event-destinations/dev-consumer/resume', headers: () => auth },
  ingestTyped: { path: `/sources/${SOURCE}`, headers: () => auth, body: { entries: [{ id: 'e2', properties: [] }] } },
  readEntries: { path: `/v1/sources/${SOURCE}/entries?id=e1`, headers: () => auth },
  readEntry: { path: `/v1/sources/${SOURCE}/entries/e1`, headers: () => auth },
  putSourceProperty: { path: `/v1/sources/${SOURCE}/properties/label`, headers: () => auth, body: {} },
  patchSource: { path: `/v1/sources/${SOURCE}`, headers: () => auth, body: {} },
  seedEventDestination: { path: '/_emulator/tenants/dev-tenant/event-destinations', body: { id: 'x', type: 'WEBHOOK' } },
  appendEvents: { path: '/_emulator/tenants/dev-tenant/events', body: { events: [] } },
  seedApplication: { path: '/_emulator/applications', body: {} },
  getEmulatorState: { path: '/_emulator/state' },
  getFaults: { path: '/_emulator/faults' },
  setFaults: { path: '/_emulator/faults', body: {} },
  clearFaults: { path: '/_emulator/faults' },
  listManagedTags: { path: '/v1/managed-tags', headers: () => auth },
  getManagedTag: { path: '/v1/managed-tags/x', headers: () => auth },
  deleteManagedTag: { path: '/v1/managed-tags/x', headers: () => auth },
  seedManagedTag: { path: '/_emulator/tenants/dev-tenant/managed-tags', body: {} },
  seedCardDefinition: { path: '/_emulator/tenants/dev-tenant/card-definitions', body: {} },
  getAccessCatalog: { path: '/v1/applications/access-catalog', headers: () => auth },
  verifyLegacyImport: { path: `/datasources/${SOURCE}/import/verify`, headers: () => auth, body: {} },
  legacyImport: { path: `/datasources/${SOURCE}/import`, headers: () => auth, body: {} },
  seedDestination: { path: '/_emulator/destinations', body: {} },
  issueDestinationToken: { path: '/destinations/open/token', body: {} },
  getDestinationOpenApi: { path: '/acme/open/v1/openapi' },
  queryDestinationGet: { path: '/acme/open/v1/items' },
  queryDestinationPost: { path: '/acme/open/v1/items' },
  getIngestOpenApi: { path: '/openapi.json' },
  getPlatformOpenApi: { path: '/openapi/platform-api.json' },
};

const operations = new Map(emulatorOperations().map((operation) => [operation.operationId, operation]));

/** Statuses every operation of a kind answers, the way the description implies them (document.ts). */
function impliedScenario(operation: OperationSpec, declared: string): Scenario | undefined {
  const target = concrete[operation.operationId]!;
  const send = (headers: Record<string, string>, body?: unknown) => status(operation.method, target.path, headers, body);
  const own = () => target.headers?.() ?? {};
  switch (declared) {
    case '429':
      return () => withFaults({ throttle: { rate: 1 } }, () => send(own(), target.body));
    case '5XX':
    case 'default':
      return () => withFaults({ errorRate: 1 }, () => send(own(), target.body));
    case '401':
      return operation.security.kind === 'tenant' ? () => send({}, target.body) : undefined;
    case '403':
      if (operation.tag === 'Emulator only') return () => fromElsewhere(operation.method, target.path);
      return operation.security.kind === 'tenant' && operation.security.scopes.length > 0 ? () => send(unscoped, target.body) : undefined;
    case '413':
      return () => send(own(), { padding: 'x'.repeat(5000) });
    case '415':
      return async () =>
        (await call(operation.method as 'POST', `${em.url}${target.path}`, { headers: { ...own(), 'content-type': 'text/plain' }, body: 'x' })).status;
    default:
      return undefined;
  }
}

/** Statuses particular to an operation. */
const specific: Record<string, Record<string, Scenario>> = {
  authorize: {
    '302': () => status('GET', '/oauth2/auth?response_type=code&client_id=dev-client&redirect_uri=http%3A%2F%2F127.0.0.1%2Fcallback&audience=dev-tenant'),
    '400': () => status('GET', '/oauth2/auth?client_id=nobody&redirect_uri=http%3A%2F%2F127.0.0.1%2Fcb'),
  },
  issueToken: {
    '200': async () => (await tokenFor(em.url)).status,
    '400': async () => (await tokenFor(em.url, { grant_type: 'password' })).status,
    '401': async () => (await tokenFor(em.url, { client_secret: 'wrong' })).status,
    '413': async () => (await tokenFor(em.url, { scope: 'x'.repeat(5000) })).status,
  },
  pullBatch: {
    '200': async () => {
      em.appendEvents('dev-tenant', [{ type: 'coverage.event', subject: 's', data: {} }]);
      return status('POST', '/v1/event-destinations/dev-consumer/pull?workerId=another', auth);
    },
    '204': () => status('POST', '/v1/event-destinations/dev-consumer/pull?workerId=third', auth),
    '400': () => status('POST', '/v1/event-destinations/dev-webhook/pull', auth),
    '404': () => status('POST', '/v1/event-destinations/nowhere/pull', auth),
    '409': async () => {
      await status('POST', '/v1/event-destinations/dev-consumer/pause', auth);
      const answered = await status('POST', '/v1/event-destinations/dev-consumer/pull?workerId=paused', auth);
      await status('POST', '/v1/event-destinations/dev-consumer/resume', auth);
      return answered;
    },
  },
  acknowledgeBatch: {
    '200': () => status('POST', '/v1/event-destinations/dev-consumer/acknowledge', auth, { leaseId, generation: 1, status: 'failed' }),
    '400': () => status('POST', '/v1/event-destinations/dev-consumer/acknowledge', auth, { leaseId: '', generation: 0, status: 'done' }),
    '404': () => status('POST', '/v1/event-destinations/dev-consumer/acknowledge', auth, { leaseId: 'never-issued', generation: 1, status: 'ok' }),
  },
  pauseDestination: {
    '200': () => status('POST', '/v1/event-destinations/dev-webhook/pause', auth),
    '404': () => status('POST', '/v1/event-destinations/nowhere/pause', auth),
  },
  resumeDestination: {
    '200': () => status('POST', '/v1/event-destinations/dev-webhook/resume', auth),
    '404': () => status('POST', '/v1/event-destinations/nowhere/resume', auth),
  },
  ingestTyped: {
    '202': () => status('POST', `/sources/${SOURCE}`, auth, { entries: [{ id: 'e3', properties: [] }] }),
    '400': () => status('POST', `/sources/${SOURCE}`, auth, { entries: [] }),
    '403': () => status('POST', `/sources/${SOURCE}`, narrow, { entries: [{ id: 'e', properties: [] }] }),
    '404': () => status('POST', '/sources/unknown', strictAuth, { entries: [{ id: 'e', properties: [] }] }, strict),
  },
  readEntries: {
    '200': () => status('GET', `/v1/sources/${SOURCE}/entries?id=e1`, auth),
    '400': () => status('GET', `/v1/sources/${SOURCE}/entries`, auth),
    '403': () => status('GET', `/v1/sources/${SOURCE}/entries?id=e1`, narrow),
    '404': () => status('GET', '/v1/sources/unknown/entries?id=e1', auth),
    '409': async () => {
      await status('PUT', `/v1/sources/${SOURCE}/properties/n`, auth, { type: 'Boolean' });
      const answered = await status('GET', `/v1/sources/${SOURCE}/entries?id=e1`, auth);
      await status('PUT', `/v1/sources/${SOURCE}/properties/n`, auth, { type: 'Integer' });
      return answered;
    },
  },
  readEntry: {
    '200': () => status('GET', `/v1/sources/${SOURCE}/entries/e1`, auth),
    '403': () => status('GET', `/v1/sources/${SOURCE}/entries/e1`, narrow),
    '404': () => status('GET', `/v1/sources/${SOURCE}/entries/missing`, auth),
    '409': async () => {
      await status('PUT', `/v1/sources/${SOURCE}/properties/n`, auth, { type: 'Boolean' });
      const answered = await status('GET', `/v1/sources/${SOURCE}/entries/e1`, auth);
      await status('PUT', `/v1/sources/${SOURCE}/properties/n`, auth, { type: 'Integer' });
      return answered;
    },
  },
  putSourceProperty: {
    '200': () => status('PUT', `/v1/sources/${SOURCE}/properties/label`, auth, { displayName: 'Label' }),
    '400': () => status('PUT', `/v1/sources/${SOURCE}/properties/label`, auth, { displayName: '' }),
    '403': () => status('PUT', `/v1/sources/${SOURCE}/properties/label`, narrow, {}),
    '404': () => status('PUT', '/v1/sources/unknown/properties/label', auth, {}),
  },
  patchSource: {
    '200': () => status('PATCH', `/v1/sources/${SOURCE}`, auth, { description: 'covered' }),
    '400': () => status('PATCH', `/v1/sources/${SOURCE}`, auth, { name: '' }),
    '403': () => status('PATCH', `/v1/sources/${SOURCE}`, narrow, {}),
    '404': () => status('PATCH', '/v1/sources/unknown', auth, {}),
  },
  seedEventDestination: {
    '201': () => status('POST', '/_emulator/tenants/coverage-tenant/event-destinations', {}, { id: 'c1', type: 'DURABLE_CONSUMER' }),
    '400': () => status('POST', '/_emulator/tenants/coverage-tenant/event-destinations', {}, { id: '', type: 'QUEUE' }),
    '409': () => status('POST', '/_emulator/tenants/dev-tenant/event-destinations', {}, { id: 'dev-consumer', type: 'DURABLE_CONSUMER' }),
  },
  appendEvents: {
    '201': () => status('POST', '/_emulator/tenants/coverage-tenant/events', {}, { events: [{ type: 'a.b', subject: 's', data: 1 }] }),
    '400': () => status('POST', '/_emulator/tenants/coverage-tenant/events', {}, { events: [] }),
  },
  seedApplication: {
    '201': () => status('POST', '/_emulator/applications', {}, { clientId: 'coverage-app', clientSecret: 's', scopes: [] }),
    '400': () => status('POST', '/_emulator/applications', {}, { clientId: '' }),
    '409': () => status('POST', '/_emulator/applications', {}, { clientId: 'dev-client', clientSecret: 's', scopes: [] }),
  },
  getEmulatorState: { '200': () => status('GET', '/_emulator/state') },
  getFaults: { '200': () => status('GET', '/_emulator/faults') },
  setFaults: {
    '200': async () => withFaults({}, () => status('POST', '/_emulator/faults', {}, { latencyMs: 0 })),
    '400': () => status('POST', '/_emulator/faults', {}, { errorRate: 2 }),
  },
  clearFaults: { '204': () => status('DELETE', '/_emulator/faults') },
  listManagedTags: { '200': () => status('GET', '/v1/managed-tags?name=col', auth), '400': () => status('GET', '/v1/managed-tags?limit=0', auth) },
  getManagedTag: {
    '200': () => status('GET', `/v1/managed-tags/${tagId}`, auth),
    '404': () => status('GET', '/v1/managed-tags/00000000-0000-0000-0000-000000000000', auth),
  },
  deleteManagedTag: {
    '204': () => status('DELETE', '/v1/managed-tags/00000000-0000-0000-0000-000000000000', auth),
    '409': () => status('DELETE', `/v1/managed-tags/${usedTagId}`, auth),
  },
  seedManagedTag: {
    '201': () => status('POST', '/_emulator/tenants/coverage-tenant/managed-tags', {}, { displayName: 'Tag', type: 'Text' }),
    '400': () => status('POST', '/_emulator/tenants/coverage-tenant/managed-tags', {}, { displayName: '', type: 'Number' }),
  },
  seedCardDefinition: {
    '201': () => status('POST', '/_emulator/tenants/coverage-tenant/card-definitions', {}, { managedTagIds: [] }),
    '400': () => status('POST', '/_emulator/tenants/coverage-tenant/card-definitions', {}, { managedTagIds: ['nope'] }),
  },
  getAccessCatalog: { '200': () => status('GET', '/v1/applications/access-catalog', auth) },
  verifyLegacyImport: {
    '200': () => status('POST', `/datasources/${SOURCE}/import/verify`, auth, { entries: [{ id: 'a' }] }),
    '400': () => status('POST', `/datasources/${SOURCE}/import/verify`, auth, { entries: [] }),
    '403': () => status('POST', `/datasources/${SOURCE}/import/verify`, narrow, { entries: [{ id: 'a' }] }),
    '404': () => status('POST', '/datasources/unknown/import/verify', strictAuth, { entries: [{ id: 'a' }] }, strict),
  },
  legacyImport: {
    '202': () => status('POST', `/datasources/${SOURCE}/import`, auth, { entries: [{ id: 'a', properties: { n: '2' } }] }),
    '400': () => status('POST', `/datasources/${SOURCE}/import`, auth, { entries: [] }),
    '403': () => status('POST', `/datasources/${SOURCE}/import`, narrow, { entries: [{ id: 'a' }] }),
    '404': () => status('POST', '/datasources/unknown/import', strictAuth, { entries: [{ id: 'a' }] }, strict),
  },
  seedDestination: {
    '201': () => status('POST', '/_emulator/destinations', {}, { customer: 'acme', destination: 'again', sourceId: SOURCE, endpoints: [{ name: 'items' }] }),
    '400': () => status('POST', '/_emulator/destinations', {}, { customer: 'a b' }),
  },
  issueDestinationToken: {
    '200': () => status('POST', '/destinations/open/token', {}, { clientId: 'dev-client', clientSecret: 'dev-secret' }),
    '400': () => status('POST', '/destinations/closed/token', {}, { clientId: 'dev-client', clientSecret: 'dev-secret' }),
    '401': () => status('POST', '/destinations/open/token', {}, { clientId: 'dev-client', clientSecret: 'wrong' }),
    '403': () => status('POST', '/destinations/foreign/token', {}, { clientId: 'dev-client', clientSecret: 'dev-secret' }),
    '404': () => status('POST', '/destinations/nowhere/token', {}, { clientId: 'dev-client', clientSecret: 'dev-secret' }),
  },
  getDestinationOpenApi: {
    '200': () => status('GET', '/acme/open/v1/openapi'),
    '401': () => status('GET', '/acme/closed/v1/openapi'),
    '404': () => status('GET', '/acme/nowhere/v1/openapi'),
  },
  queryDestinationGet: {
    '200': () => status('GET', '/acme/open/v1/items?top=1', { authorization: `Bearer ${destinationToken}` }),
    '400': () => status('GET', '/acme/open/v1/items?top=ten'),
    '401': () => status('GET', '/acme/closed/v1/items'),
    '404': () => status('GET', '/acme/open/v1/nothing'),
  },
  queryDestinationPost: {
    '200': () => status('POST', '/acme/open/v1/items', {}, { top: 1 }),
    '400': () => status('POST', '/acme/open/v1/items', {}, { top: 'ten' }),
    '401': () => status('POST', '/acme/closed/v1/items', {}, {}),
    '404': () => status('POST', '/acme/open/v1/nothing', {}, {}),
  },
  getIngestOpenApi: { '200': () => status('GET', '/openapi.json') },
  getPlatformOpenApi: { '200': () => status('GET', '/openapi/platform-api.json') },
};

const pairs = [...operations.values()].flatMap((operation) => Object.keys(operationResponses(operation)).map((declared) => ({ operation, declared })));

describe('every status the description declares is one the emulator answers', () => {
  it('has a scenario for exactly the declared (operation, status) pairs', () => {
    expect(Object.keys(concrete).sort()).toEqual([...operations.keys()].sort());
    const missing = pairs.filter(
      ({ operation, declared }) => specific[operation.operationId]?.[declared] === undefined && impliedScenario(operation, declared) === undefined,
    );
    expect(missing.map(({ operation, declared }) => `${operation.operationId} ${declared}`)).toEqual([]);
    const extra = Object.entries(specific).flatMap(([id, byStatus]) =>
      Object.keys(byStatus)
        .filter((declared) => !(declared in operationResponses(operations.get(id)!)))
        .map((declared) => `${id} ${declared}`),
    );
    expect(extra).toEqual([]);
  });

  it.each(pairs.map(({ operation, declared }) => [`${operation.operationId} ${declared}`, operation, declared] as const))(
    '%s',
    async (_name, operation, declared) => {
      const scenario = specific[operation.operationId]?.[declared] ?? impliedScenario(operation, declared)!;
      const answered = String(await scenario());
      if (declared === 'default') expect(answered in operationResponses(operation), `${answered} is declared on its own`).toBe(false);
      else if (declared.endsWith('XX')) expect(answered[0]).toBe(declared[0]);
      else expect(answered).toBe(declared);
    },
  );
});
