import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { catalogue, startDestinationHarness, type DestinationHarness } from './destinations-fixtures.js';

let h: DestinationHarness;
const issuerTokens = new Map<string, string>();
beforeEach(async () => {
  h = await startDestinationHarness({ isIssuerTokenForAudience: (token, audience) => issuerTokens.get(token) === audience });
});
afterEach(() => h.close());

async function protectedDestination() {
  const d = await h.fresh(catalogue(), { protected: true });
  const clientId = `app-${randomUUID()}`;
  h.apps.set(clientId, { secret: 's3cret', tenant: d.tenant });
  return { ...d, clientId };
}

function requestToken(destinationId: string, clientId: string, clientSecret = 's3cret'): Promise<Response> {
  return fetch(`${h.baseUrl}/destinations/${destinationId}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ clientId, clientSecret }),
  });
}

describe('destination tokens and protection', () => {
  it('a public destination answers without credentials', async () => {
    const d = await h.fresh(catalogue());
    expect((await fetch(`${d.base}/products`)).status).toBe(200);
  });

  it('a protected destination refuses a request without a bearer token (401)', async () => {
    const d = await protectedDestination();
    const res = await fetch(`${d.base}/products`);
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer');
    expect((await fetch(`${d.base}/openapi`)).status).toBe(401);
    expect((await fetch(`${d.base}/products`, { headers: { authorization: 'Bearer not-a-token' } })).status).toBe(401);
  });

  it('the token endpoint issues a 24 h token that opens the destination, reusable', async () => {
    const d = await protectedDestination();
    const res = await requestToken(d.destination, d.clientId);
    expect(res.status).toBe(200);
    const token = (await res.json()) as { accessToken: string; expiresIn: number };
    expect(token.expiresIn).toBe(24 * 3600);
    const headers = { authorization: `Bearer ${token.accessToken}` };
    expect((await fetch(`${d.base}/products`, { headers })).status).toBe(200);
    expect((await fetch(`${d.base}/products`, { method: 'POST', headers })).status).toBe(200);
    expect((await fetch(`${d.base}/openapi`, { headers })).status).toBe(200);
  });

  it('the token endpoint also accepts the API version ID as destination id', async () => {
    const d = await protectedDestination();
    expect((await requestToken(d.apiVersionId, d.clientId)).status).toBe(200);
  });

  it('a token expires after 24 hours', async () => {
    const d = await protectedDestination();
    const { accessToken } = (await (await requestToken(d.destination, d.clientId)).json()) as { accessToken: string };
    const headers = { authorization: `Bearer ${accessToken}` };
    h.clock.nowMs += 24 * 3600 * 1000 - 1000;
    expect((await fetch(`${d.base}/products`, { headers })).status).toBe(200);
    h.clock.nowMs += 1000;
    expect((await fetch(`${d.base}/products`, { headers })).status).toBe(401);
  });

  it('a token of another destination is refused', async () => {
    const a = await protectedDestination();
    const b = await protectedDestination();
    h.apps.set(a.clientId, { secret: 's3cret', tenant: b.tenant });
    const { accessToken } = (await (await requestToken(b.destination, a.clientId)).json()) as { accessToken: string };
    expect((await fetch(`${a.base}/products`, { headers: { authorization: `Bearer ${accessToken}` } })).status).toBe(401);
  });

  it('an issuer token with the API version ID as audience opens the destination', async () => {
    const d = await protectedDestination();
    issuerTokens.set('issuer-token-1', d.apiVersionId);
    issuerTokens.set('issuer-token-2', 'another-audience');
    expect((await fetch(`${d.base}/products`, { headers: { authorization: 'Bearer issuer-token-1' } })).status).toBe(200);
    expect((await fetch(`${d.base}/products`, { headers: { authorization: 'Bearer issuer-token-2' } })).status).toBe(401);
  });

  it('wrong credentials, a missing field, an unknown destination or another tenant are refused', async () => {
    const d = await protectedDestination();
    expect((await requestToken(d.destination, d.clientId, 'wrong')).status).toBe(401);
    const missing = await fetch(`${h.baseUrl}/destinations/${d.destination}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ clientId: d.clientId }),
    });
    expect(missing.status).toBe(400);
    expect(Object.keys(((await missing.json()) as { errors: object }).errors)).toEqual(['clientSecret']);
    expect((await requestToken('no-such-destination', d.clientId)).status).toBe(404);
    const other = `app-${randomUUID()}`;
    h.apps.set(other, { secret: 's3cret', tenant: 'someone-else' });
    expect((await requestToken(d.destination, other)).status).toBe(403);
  });

  it('more than 100 token requests per hour per application answer 429 with Retry-After', async () => {
    const d = await protectedDestination();
    const start = h.clock.nowMs;
    for (let i = 0; i < 100; i++) {
      h.clock.nowMs = start + i * 1000;
      expect((await requestToken(d.destination, d.clientId)).status).toBe(200);
    }
    h.clock.nowMs = start + 600_000;
    const limited = await requestToken(d.destination, d.clientId);
    expect(limited.status).toBe(429);
    // The first request (at `start`) leaves the window at start + 1 h: 3,000 s from now.
    expect(limited.headers.get('retry-after')).toBe('3000');
    // Another application keeps its own budget.
    const other = `app-${randomUUID()}`;
    h.apps.set(other, { secret: 's3cret', tenant: d.tenant });
    expect((await requestToken(d.destination, other)).status).toBe(200);
    h.clock.nowMs = start + 3600 * 1000 + 1;
    expect((await requestToken(d.destination, d.clientId)).status).toBe(200);
  });

  it('the secret never appears in an error answer', async () => {
    const d = await protectedDestination();
    const res = await requestToken(d.destination, d.clientId, 'do-not-echo-me');
    expect(await res.text()).not.toContain('do-not-echo-me');
  });
});
