import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ErrorCodes } from '../../src/errors.js';
import { createClient, type ClientOptions, type PlatformClient } from '../../src/client/index.js';
import { SECRET, header, json, mockPlatform, type MockPlatform } from './mock-platform.js';

let platform: MockPlatform;
beforeEach(() => {
  platform = mockPlatform();
});
afterEach(async () => {
  vi.useRealTimers();
  await platform.close();
});

function client(overrides: Partial<ClientOptions> = {}): PlatformClient {
  return createClient({
    baseUrl: platform.origin,
    tenant: 'dev-tenant',
    clientId: 'dev-client',
    clientSecret: SECRET,
    dispatcher: platform.agent,
    retry: { baseDelayMs: 1, maxDelayMs: 5, maxAttempts: 3 },
    ...overrides,
  });
}

interface Seen {
  path: string;
  method: string;
  headers: unknown;
  body: string;
}

function script(prefix: string, replies: Array<{ status: number; data?: unknown; headers?: Record<string, string>; error?: boolean }>): Seen[] {
  const seen: Seen[] = [];
  for (const reply of replies) {
    const interceptor = platform.pool.intercept({ path: (path) => path.startsWith(prefix), method: () => true });
    if (reply.error) {
      interceptor.replyWithError(new Error('socket hang up'));
      continue;
    }
    interceptor.reply((opts) => {
      seen.push({ path: opts.path, method: opts.method, headers: opts.headers, body: opts.body == null ? '' : String(opts.body) });
      return {
        statusCode: reply.status,
        data: (reply.data ?? '') as object,
        responseOptions: { headers: { 'content-type': 'application/json', ...reply.headers } },
      };
    });
  }
  return seen;
}

const accepted = {
  correlationId: '5f0c7d2e-8a43-4a8e-9a55-3f9b1f0e9c11',
  sourceId: 'products',
  acceptedAt: '2025-01-01T00:00:00Z',
  acceptedEntryCount: 1,
  newPropertiesFound: [{ id: 'name', type: 'Text' }],
};
const request = { entries: [{ id: 'p1', properties: [{ id: 'name', value: 'Chair' }] }] };

describe('createClient options', () => {
  it('names the option at fault and never echoes the secret', () => {
    const cases: Array<[Partial<ClientOptions>, RegExp]> = [
      [{ tenant: undefined }, /tenant is required/],
      [{ clientSecret: undefined }, /clientSecret is required/],
      [{ apiKey: 'k' }, /either apiKey or clientId/],
      [{ baseUrl: 'not a url' }, /baseUrl must be an absolute/],
      [{ baseUrl: 'ftp://x' }, /baseUrl must use http/],
      [{ connections: 0, dispatcher: undefined }, /connections/],
      [{ retry: { maxAttempts: 0 } }, /retry.maxAttempts/],
    ];
    for (const [overrides, message] of cases) {
      const err = (() => {
        try {
          client(overrides);
        } catch (caught) {
          return caught;
        }
        return undefined;
      })();
      expect(err).toMatchObject({ code: ErrorCodes.CONFIG, message: expect.stringMatching(message) });
      expect(JSON.stringify(err) + String(err)).not.toContain(SECRET);
    }
  });
});

describe('credentials', () => {
  it('10 concurrent calls share one token request', async () => {
    platform.issueTokens();
    script('/v1/event-destinations/d/pull', Array(10).fill({ status: 204 }));
    const api = client();
    await Promise.all(Array.from({ length: 10 }, () => api.pull('d', {})));
    expect(platform.tokenRequests).toHaveLength(1);
  });

  it('refreshes before expiry (fake clock)', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(new Date('2025-01-01T00:00:00Z'));
    platform.issueTokens(300);
    const seen = script('/v1/event-destinations/d/pull', Array(3).fill({ status: 204 }));
    const api = client();
    await api.pull('d', {});
    vi.setSystemTime(new Date('2025-01-01T00:03:59Z'));
    await api.pull('d', {});
    vi.setSystemTime(new Date('2025-01-01T00:04:00Z'));
    await api.pull('d', {});
    expect(seen.map((s) => header(s.headers, 'authorization'))).toEqual(['Bearer token-1', 'Bearer token-1', 'Bearer token-2']);
  });

  it('token() and ensureCredential() obtain the bearer token; an API key client has none', async () => {
    platform.issueTokens();
    const api = client();
    await api.ensureCredential();
    expect(platform.tokenRequests).toHaveLength(1);
    await expect(api.token()).resolves.toBe('token-1');
    const keyed = client({ clientId: undefined, clientSecret: undefined, tenant: undefined, apiKey: 'org-key' });
    await expect(keyed.ensureCredential()).resolves.toBeUndefined();
    await expect(keyed.token()).rejects.toMatchObject({ code: ErrorCodes.AUTH });
    expect(platform.tokenRequests).toHaveLength(1);
  });

  it('uses authUrl for the issuer and keeps a path prefix of baseUrl', async () => {
    const issuer = platform.agent.get('http://issuer.test');
    let audience = '';
    issuer.intercept({ path: '/oauth2/token', method: 'POST' }).reply((opts) => {
      audience = new URLSearchParams(String(opts.body)).get('audience') ?? '';
      return { statusCode: 200, data: { access_token: 'from-issuer', token_type: 'Bearer', expires_in: 600, scope: '' }, responseOptions: json };
    });
    const seen = script('/api/v1/event-destinations/d/pull', [{ status: 204 }]);
    await client({ baseUrl: `${platform.origin}/api`, authUrl: 'http://issuer.test' }).pull('d', {});
    expect(audience).toBe('dev-tenant');
    expect(header(seen[0]?.headers, 'authorization')).toBe('Bearer from-issuer');
  });
});

describe('ingest', () => {
  it('posts the strict body to /sources/{id} and returns the 202 response once', async () => {
    platform.issueTokens();
    const seen = script('/sources/', [
      { status: 202, data: accepted },
      { status: 202, data: accepted },
    ]);
    const loose = { entries: [{ id: 'p1', note: 'x', properties: [{ id: 'name', value: 'Chair', junk: 1 }] }], extra: true };
    await expect(client().ingest('my source', loose)).resolves.toEqual(accepted);
    expect(seen).toHaveLength(1);
    expect(seen[0]!.path).toBe('/sources/my%20source');
    expect(header(seen[0]!.headers, 'content-type')).toBe('application/json');
    expect(JSON.parse(seen[0]!.body)).toEqual(request);
  });

  it('retries 429 (honouring Retry-After), 5xx and network errors, then succeeds', async () => {
    platform.issueTokens();
    const seen = script('/sources/', [{ status: 429, headers: { 'retry-after': '1' } }, { status: 503 }, { status: 202, data: accepted }]);
    await expect(client().ingest('products', request)).resolves.toMatchObject({ correlationId: accepted.correlationId });
    expect(seen).toHaveLength(3);

    const again = script('/sources/', [
      { status: 0, error: true },
      { status: 202, data: accepted },
    ]);
    await expect(client().ingest('products', request)).resolves.toMatchObject({ acceptedEntryCount: 1 });
    expect(again).toHaveLength(1);
  });

  it('gives up after maxAttempts with the last ApiError', async () => {
    platform.issueTokens();
    const seen = script('/sources/', Array(4).fill({ status: 500 }));
    await expect(client().ingest('products', request)).rejects.toMatchObject({ status: 500, code: ErrorCodes.API });
    expect(seen).toHaveLength(3);
  });

  it('does not retry a 400 or a 408', async () => {
    platform.issueTokens();
    const problem = {
      type: 'about:blank',
      title: 'Bad Request',
      status: 400,
      detail: 'invalid',
      instance: '/sources/p',
      traceId: 't',
      errors: { 'entries[0].properties[0].value': ['must be a string'] },
    };
    const seen = script('/sources/', [{ status: 400, data: problem }, { status: 408 }, { status: 202, data: accepted }, { status: 202, data: accepted }]);
    const err = await client()
      .ingest('products', request)
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 400, problem: { errors: problem.errors } });
    await expect(client().ingest('products', request)).rejects.toMatchObject({ status: 408 });
    expect(seen).toHaveLength(2);
  });

  it('validates client-side first and sends nothing for an invalid batch', async () => {
    platform.issueTokens();
    const err = await client()
      .ingest('products', { entries: [] })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: ErrorCodes.INGEST_VALIDATION });
    expect(Object.keys((err as { errors: object }).errors).length).toBeGreaterThan(0);
    expect(platform.tokenRequests).toHaveLength(0);
  });

  it('sends an unvalidated batch as given with validate: false', async () => {
    platform.issueTokens();
    const seen = script('/sources/', [{ status: 400, data: { title: 'Bad Request', status: 400, errors: { entries: ['required'] } } }]);
    await expect(client().ingest('products', { entries: [] }, { validate: false })).rejects.toMatchObject({ status: 400 });
    expect(JSON.parse(seen[0]!.body)).toEqual({ entries: [] });
  });
});

describe('reads and metadata', () => {
  it('getEntries repeats id in order and checks 1..100 ids client-side', async () => {
    platform.issueTokens();
    const items = [{ id: 'b', properties: [], lastUpdated: '2025-01-01T00:00:00Z' }];
    const seen = script('/v1/sources/', [{ status: 200, data: { items } }]);
    await expect(client().getEntries('products', ['b', 'a&c'])).resolves.toEqual({ items });
    const url = new URL(seen[0]!.path, platform.origin);
    expect(url.pathname).toBe('/v1/sources/products/entries');
    expect(url.searchParams.getAll('id')).toEqual(['b', 'a&c']);
    expect(seen[0]!.method).toBe('GET');
    await expect(client().getEntries('products', [])).rejects.toThrow(/1..100/);
    await expect(
      client().getEntries(
        'products',
        Array.from({ length: 101 }, (_, i) => `e${i}`),
      ),
    ).rejects.toThrow(/got 101/);
    expect(seen).toHaveLength(1);
  });

  it('getEntry encodes both ids and surfaces 404 as ApiError', async () => {
    platform.issueTokens();
    const entry = { id: 'a/b', properties: [], lastUpdated: '2025-01-01T00:00:00Z' };
    const seen = script('/v1/sources/', [
      { status: 200, data: entry },
      { status: 404, data: { title: 'Not Found', status: 404 } },
    ]);
    await expect(client().getEntry('s 1', 'a/b')).resolves.toEqual(entry);
    expect(seen[0]!.path).toBe('/v1/sources/s%201/entries/a%2Fb');
    await expect(client().getEntry('s', 'missing')).rejects.toMatchObject({ status: 404, code: ErrorCodes.API });
  });

  it('putProperty and patchSource send only the spec fields, null kept (preserve)', async () => {
    platform.issueTokens();
    const property = { id: 'name', displayName: 'Name', description: '', type: 'Text', delimiter: '', state: 'Active' };
    const source = { id: 's', name: 'S', description: '', status: 'Active', type: 'Generic', createdAt: 'x', updatedAt: 'y' };
    const seen = script('/v1/sources/', [
      { status: 200, data: property },
      { status: 200, data: source },
    ]);
    const api = client();
    await expect(api.putProperty('s', 'Name', { displayName: 'Name', delimiter: null, ...{ bogus: 1 } })).resolves.toEqual(property);
    await expect(api.patchSource('s', { description: '' })).resolves.toEqual(source);
    expect(seen.map((s) => [s.method, s.path, JSON.parse(s.body)])).toEqual([
      ['PUT', '/v1/sources/s/properties/Name', { displayName: 'Name', delimiter: null }],
      ['PATCH', '/v1/sources/s', { description: '' }],
    ]);
  });
});

describe('close', () => {
  it('closes its own dispatcher once and leaves a given one open', async () => {
    const own = createClient({ baseUrl: 'http://127.0.0.1:9', apiKey: 'k' });
    await own.close();
    await own.close();
    await expect(own.pull('d', {})).rejects.toBeDefined();
    platform.issueTokens();
    script('/v1/event-destinations/d/pull', [{ status: 204 }]);
    const shared = client();
    await shared.close();
    await expect(client().pull('d', {})).resolves.toEqual({ status: 204 });
  });
});
