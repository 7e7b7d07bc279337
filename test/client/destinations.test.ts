import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent, DecoratorHandler, type Dispatcher } from 'undici';
import { ErrorCodes } from '../../src/errors.js';
import { createClient, createDestinationClient, type DestinationClient, type PlatformClient } from '../../src/client/index.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { newTenantApp, seed } from './platform-helpers.js';

/**
 * The destination client against the real emulator over HTTP: one test per parameter rule of the
 * spec's Destination query API, in the GET and POST forms, plus protection and the OpenAPI.
 */
const COLORS = ['red', 'blue', 'green', 'black'];
const PRODUCTS = 60;

let emulator: RunningEmulator;
let api: PlatformClient;
let source: string;
let before: Date;
const clients: DestinationClient[] = [];

function product(i: number) {
  return {
    id: `p${String(i).padStart(2, '0')}`,
    properties: [
      { id: 'title', value: `${i % 2 === 0 ? 'Summer' : 'Winter'} shirt ${i}`, language: 'en' },
      { id: 'title', value: `${i % 2 === 0 ? 'Sommer' : 'Vinter'} skjorte ${i}`, language: 'da' },
      { id: 'color', value: COLORS[i % 4]! },
      { id: 'price', value: 10 + i + 0.5 },
      { id: 'stock', value: i },
      { id: 'tags', value: i % 3 === 0 ? ['sale', 'new'] : i % 3 === 1 ? ['sale'] : ['new'] },
      { id: 'active', value: i % 2 === 0 },
    ],
  };
}

/** Seeds a destination over the shared source; each test gets its own destination name. */
async function destination(body: Record<string, unknown> = {}, clientOptions: Record<string, unknown> = {}) {
  const name = `d-${randomUUID().slice(0, 8)}`;
  const seeded = await seed<{ customer: string; destination: string; apiVersionId: string }>(emulator, '/_emulator/destinations', {
    customer: 'acme',
    destination: name,
    sourceId: source,
    languages: ['en', 'da'],
    endpoints: [
      {
        name: 'products',
        properties: [{ id: 'title', alias: 'name' }, { id: 'color' }, { id: 'price' }, { id: 'stock' }, { id: 'tags' }, { id: 'active' }],
        facets: [{ propertyId: 'color', size: 2, header: { en: 'Colour', da: 'Farve' } }],
      },
    ],
    ...body,
  });
  const client = createDestinationClient({ globalUrl: emulator.url, customer: 'acme', destination: name, retry: { baseDelayMs: 5 }, ...clientOptions });
  clients.push(client);
  return { client, ...seeded };
}

beforeAll(async () => {
  emulator = await startEmulator({ port: 0 });
  api = createClient({ baseUrl: emulator.url, tenant: 'dev-tenant', clientId: 'dev-client', clientSecret: 'dev-secret' });
  source = `products-${randomUUID()}`;
  before = new Date(Date.now() - 1000);
  await api.ingest(source, { entries: Array.from({ length: PRODUCTS }, (_, i) => product(i)) });
  await emulator.idle();
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await api?.close();
  await emulator?.close();
});

const ids = (results: Array<Record<string, unknown>>) => results.map((r) => r.id);

describe('destination queries', () => {
  it('without parameters returns the first 50 results, the default language and the facets', async () => {
    const { client } = await destination();
    const answer = await client.get('products');
    expect(answer.results).toHaveLength(50);
    expect(answer.language).toBe('en');
    expect(answer.total).toBeUndefined();
    expect(answer.facets).toEqual([
      {
        propertyId: 'color',
        header: 'Colour',
        values: [
          { count: 15, key: 'black' },
          { count: 15, key: 'blue' },
        ],
      },
    ]);
  });

  it('GET equality filters: AND across properties, OR within one', async () => {
    const { client } = await destination();
    const answer = await client.get('products', { equals: { color: ['red', 'blue'], active: true }, includeTotals: true, top: 100 });
    // red: i%4==0, blue: i%4==1; active: i even -> only red ones (i%4==0).
    expect(answer.total).toBe(15);
    expect(answer.results.every((r) => r.color === 'red' && r.active === true)).toBe(true);
  });

  it('id in both forms, with select of exposed (aliased) names', async () => {
    const { client } = await destination();
    const viaGet = await client.get('products', { id: ['p03', 'p01'], select: ['id', 'name'], sortAsc: ['id'] });
    expect(viaGet.results).toEqual([
      { id: 'p01', name: 'Winter shirt 1' },
      { id: 'p03', name: 'Winter shirt 3' },
    ]);
    const viaPost = await client.post('products', { id: ['p03', 'p01'], select: ['id', 'name'], sortAsc: ['id'] });
    expect(viaPost.results).toEqual(viaGet.results);
  });

  it('POST filter: queries OR-ed, must and must_not, operators, Between exclusive and BetweenInclusive', async () => {
    const { client } = await destination();
    const between = await client.post('products', { filter: [{ must: { stock: { operator: 'Between', values: [10, 13] } } }], sortAsc: ['stock'] });
    expect(ids(between.results)).toEqual(['p11', 'p12']);
    const inclusive = await client.post('products', { filter: [{ must: { stock: { operator: 'BetweenInclusive', values: [10, 13] } } }], sortAsc: ['stock'] });
    expect(ids(inclusive.results)).toEqual(['p10', 'p11', 'p12', 'p13']);
    const orred = await client.post('products', {
      filter: [
        { must: { stock: { operator: 'LessThan', values: [2] } } },
        { must: { price: { operator: 'GreaterThanOrEqual', values: [68.5] } }, must_not: { color: ['green'] } },
      ],
      sortAsc: ['stock'],
    });
    // stock < 2: p00, p01; price >= 68.5 is i >= 58: p58 (green, excluded), p59 (black).
    expect(ids(orred.results)).toEqual(['p00', 'p01', 'p59']);
  });

  it('POST array criteria match ANY value; match All requires every value of a list', async () => {
    const { client } = await destination();
    const any = await client.post('products', { filter: [{ must: { tags: ['sale'] } }], includeTotals: true, top: 0 });
    expect(any.total).toBe(40);
    const all = await client.post('products', { filter: [{ must: { tags: { values: ['sale', 'new'], match: 'All' } } }], includeTotals: true, top: 0 });
    expect(all.total).toBe(20);
  });

  it('listIds returns only IDs; includeMeta adds @meta', async () => {
    const { client } = await destination();
    const listed = await client.get('products', { listIds: true, top: 2, sortAsc: ['id'] });
    expect(listed.results).toEqual([{ id: 'p00' }, { id: 'p01' }]);
    const meta = await client.post('products', { id: ['p05'], includeMeta: true });
    expect(meta.results[0]!['@meta']).toEqual({ '@timestamp': expect.any(String), '@id': 'p05', '@type': 'products', '@language': 'en' });
  });

  it('top and skip page; the 10,000 window is refused before sending', async () => {
    const { client } = await destination();
    const page = await client.get('products', { sortDesc: ['stock'], top: 3, skip: 2 });
    expect(ids(page.results)).toEqual(['p57', 'p56', 'p55']);
    await expect(client.get('products', { top: 5000, skip: 5001 })).rejects.toThrow(/10,000/);
    await expect(client.post('products', { top: -1 })).rejects.toThrow(RangeError);
  });

  it('after with a sort continues from a value, in both forms', async () => {
    const { client } = await destination();
    const viaGet = await client.get('products', { sortAsc: ['stock'], after: '57' });
    expect(ids(viaGet.results)).toEqual(['p58', 'p59']);
    const viaPost = await client.post('products', { sortDesc: ['stock'], after: '2', top: 5 });
    expect(ids(viaPost.results)).toEqual(['p01', 'p00']);
  });

  it('language picks the translation; all returns one result per language', async () => {
    const { client } = await destination();
    const da = await client.get('products', { id: ['p02'], language: 'da' });
    expect(da).toMatchObject({ language: 'da', results: [{ id: 'p02', name: 'Sommer skjorte 2' }] });
    expect(da.facets?.[0]?.header).toBe('Farve');
    const all = await client.post('products', { id: ['p02'], language: 'all', includeMeta: true });
    expect(all.results.map((r) => (r['@meta'] as { '@language': string })['@language']).sort()).toEqual(['da', 'en']);
  });

  it('search: wildcards, searchOn and case sensitivity', async () => {
    const { client } = await destination();
    const sensitive = await client.get('products', { search: ['summer*'], searchOn: ['name'], includeTotals: true, top: 0 });
    expect(sensitive.total).toBe(0);
    const insensitive = await client.get('products', { search: ['summer*'], searchOn: ['name'], caseInsensitiveSearch: true, includeTotals: true, top: 0 });
    expect(insensitive.total).toBe(30);
    const contains = await client.post('products', { search: ['*shirt 5*'], searchOn: ['name'], sortAsc: ['id'] });
    expect(ids(contains.results)).toEqual(['p05', 'p50', 'p51', 'p52', 'p53', 'p54', 'p55', 'p56', 'p57', 'p58', 'p59']);
  });

  it('periodSince and periodBefore take Dates in both forms (spec datetime format on the wire)', async () => {
    const { client } = await destination();
    const since = await client.get('products', { periodSince: before, includeTotals: true, top: 0 });
    expect(since.total).toBe(PRODUCTS);
    const beforeAll = await client.post('products', { periodBefore: before, includeTotals: true, top: 0 });
    expect(beforeAll.total).toBe(0);
  });

  it('a bad parameter is ApiError 400 with errors keyed by parameter', async () => {
    const { client } = await destination();
    const err = await client.post('products', { sortAsc: ['nope'] }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: ErrorCodes.API, status: 400 });
    expect(Object.keys((err as { problem: { errors: object } }).problem.errors).join()).toMatch(/sortAsc/);
    await expect(client.get('missing-endpoint')).rejects.toMatchObject({ status: 404 });
  });

  it('answers gzip-compressed when asked (the default) and the client inflates them', async () => {
    const { destination: name } = await destination();
    const seen: string[] = [];
    // Records the content coding of each answer before the client inflates it.
    // (undici's types declare DecoratorHandler without its methods; they exist at runtime.)
    abstract class Decorated {
      constructor(_handler: Dispatcher.DispatchHandler) {}
      onResponseStart(_c: Dispatcher.DispatchController, _s: number, _h: Record<string, string | string[]>, _m: string): void {}
    }
    const Base = DecoratorHandler as unknown as typeof Decorated;
    class Recorder extends Base {
      override onResponseStart(controller: Dispatcher.DispatchController, status: number, headers: Record<string, string | string[]>, message: string): void {
        seen.push(String(headers['content-encoding'] ?? 'identity'));
        super.onResponseStart(controller, status, headers, message);
      }
    }
    const recording: Dispatcher = new Agent().compose((dispatch) => (opts, handler) => dispatch(opts, new Recorder(handler)));
    const gz = createDestinationClient({ globalUrl: emulator.url, customer: 'acme', destination: name, dispatcher: recording });
    const plain = createDestinationClient({ globalUrl: emulator.url, customer: 'acme', destination: name, dispatcher: recording, gzip: false });
    try {
      const a = await gz.get('products', { top: 3, sortAsc: ['id'] });
      const b = await plain.get('products', { top: 3, sortAsc: ['id'] });
      expect(a).toEqual(b);
      expect(a.results).toHaveLength(3);
      expect(seen).toEqual(['gzip', 'identity']);
    } finally {
      await recording.close();
    }
  });

  it('serves the destination OpenAPI 3.1 description', async () => {
    const { client } = await destination();
    const doc = await client.openApi();
    expect(String(doc.openapi)).toMatch(/^3\.1\./);
    expect(Object.keys(doc.paths as object).join()).toMatch(/products/);
  });
});

describe('protected destinations', () => {
  it('refuse requests without a token (401) and answer with the destination token', async () => {
    const app = await newTenantApp(emulator, { tenant: 'dev-tenant' });
    await app.client.close();
    const { destination: name } = await destination({ protected: true });
    const anonymous = createDestinationClient({ globalUrl: emulator.url, customer: 'acme', destination: name });
    clients.push(anonymous);
    await expect(anonymous.get('products')).rejects.toMatchObject({ status: 401 });
    const authed = createDestinationClient({
      globalUrl: emulator.url,
      customer: 'acme',
      destination: name,
      clientId: app.clientId,
      clientSecret: app.clientSecret,
    });
    clients.push(authed);
    await expect(authed.get('products', { top: 1 })).resolves.toMatchObject({ results: [expect.any(Object)] });
    await expect(authed.openApi()).resolves.toHaveProperty('openapi');
  });

  it('reuse one destination token across many concurrent and later queries', async () => {
    const app = await newTenantApp(emulator, { tenant: 'dev-tenant' });
    await app.client.close();
    const { destination: name } = await destination({ protected: true });
    const authed = createDestinationClient({
      globalUrl: emulator.url,
      customer: 'acme',
      destination: name,
      clientId: app.clientId,
      clientSecret: app.clientSecret,
    });
    clients.push(authed);
    await Promise.all(Array.from({ length: 10 }, () => authed.post('products', { top: 1 })));
    for (let i = 0; i < 5; i++) await authed.get('products', { top: 1 });
    expect(authed.tokenRequestCount).toBe(1);
  });

  it('a wrong secret is AuthError 401 that does not carry the secret', async () => {
    const { destination: name } = await destination({ protected: true });
    const secret = `wrong-${randomUUID()}`;
    const bad = createDestinationClient({ globalUrl: emulator.url, customer: 'acme', destination: name, clientId: 'dev-client', clientSecret: secret });
    clients.push(bad);
    const err = await bad.get('products').catch((e: unknown) => e);
    expect(err).toMatchObject({ code: ErrorCodes.AUTH, status: 401 });
    expect(String(err) + JSON.stringify(err)).not.toContain(secret);
  });

  it('an issuer token with the API version ID as audience opens that destination only (spec, Authentication 8)', async () => {
    const app = await newTenantApp(emulator, { tenant: 'dev-tenant' });
    await app.client.close();
    const first = await destination({ protected: true });
    const second = await destination({ protected: true });
    const issuerToken = async (audience: string) => {
      const form = new URLSearchParams({ grant_type: 'client_credentials', client_id: app.clientId, client_secret: app.clientSecret, audience });
      const response = await fetch(`${emulator.url}/oauth2/token`, { method: 'POST', body: form });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    };
    const issued = await issuerToken(first.apiVersionId);
    expect(issued).toMatchObject({ status: 200, body: { token_type: 'Bearer', scope: '' } });
    const token = issued.body.access_token as string;
    const withToken = (name: string) => createDestinationClient({ globalUrl: emulator.url, customer: 'acme', destination: name, accessToken: () => token });
    const opened = withToken(first.destination);
    const other = withToken(second.destination);
    clients.push(opened, other);
    await expect(opened.get('products', { top: 1 })).resolves.toMatchObject({ results: [expect.any(Object)] });
    await expect(other.get('products', { top: 1 })).rejects.toMatchObject({ status: 401 });
    // The API-version token grants nothing on the tenant API.
    const pull = await fetch(`${emulator.url}/v1/event-destinations/dev-consumer/pull`, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
    expect(pull.status).toBe(401);
    // An audience that is neither the tenant nor a known API version ID is refused.
    expect(await issuerToken(randomUUID())).toMatchObject({ status: 400, body: { error: 'invalid_target' } });
  });

  it('options are checked at creation: half a credential or a bad URL is ConfigError', () => {
    expect(() => createDestinationClient({ globalUrl: 'ftp://x', customer: 'a', destination: 'b' })).toThrow(/globalUrl/);
    expect(() => createDestinationClient({ globalUrl: emulator.url, customer: 'a', destination: 'b', clientSecret: 's' })).toThrow(/clientId/);
    expect(() => createDestinationClient({ globalUrl: emulator.url, customer: '', destination: 'b' })).toThrow(/customer/);
  });
});
