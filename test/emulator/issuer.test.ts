import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { waitFor } from '../fixtures/wait-for.js';
import { call, tokenFor } from './helpers.js';

/** Spec: "Issue a machine access token", "Authentication". */
describe('emulator issuer and authentication', () => {
  let em: RunningEmulator;
  beforeEach(async () => {
    em = await startEmulator({
      port: 0,
      config: {
        applications: [{ clientId: 'narrow-client', clientSecret: 'narrow-secret', scopes: ['write:sources', 'read:events'] }],
        tenants: [{ id: 'other-tenant', apiKeys: ['other-key'], destinations: [{ id: 'other-consumer', type: 'DURABLE_CONSUMER' }] }],
      },
    });
  });
  afterEach(async () => {
    await em.close();
  });

  const pull = (headers: Record<string, string>, destination = 'dev-consumer') =>
    call('POST', `${em.url}/v1/event-destinations/${destination}/pull`, { headers });

  it('issues a bearer token the API accepts', async () => {
    const res = await tokenFor(em.url);
    expect(res.status).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.body.token_type).toBe('Bearer');
    expect(res.body.expires_in).toBe(3600);
    expect(res.body.access_token.split('.')).toHaveLength(3);
    expect((await pull({ authorization: `Bearer ${res.body.access_token}` })).status).toBe(204);
  });

  it('grants every enabled scope when scope is omitted', async () => {
    const all = await tokenFor(em.url);
    expect(all.body.scope.split(' ').sort()).toEqual(['import-datasource', 'read:events', 'read:events:pull', 'read:events:sse', 'write:sources']);
    const narrow = await tokenFor(em.url, { client_id: 'narrow-client', client_secret: 'narrow-secret' });
    expect(narrow.body.scope.split(' ').sort()).toEqual(['read:events', 'write:sources']);
  });

  it('grants exactly the requested subset of scopes', async () => {
    const res = await tokenFor(em.url, { scope: 'write:sources' });
    expect(res.body.scope).toBe('write:sources');
    expect((await pull({ authorization: `Bearer ${res.body.access_token}` })).status).toBe(403);
  });

  it('refuses a scope not enabled for the client with invalid_scope', async () => {
    const res = await tokenFor(em.url, { client_id: 'narrow-client', client_secret: 'narrow-secret', scope: 'read:events import-datasource' });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_scope');
    expect(res.body.error_description).toContain('import-datasource');
  });

  it('answers a wrong secret and an unknown client with the same invalid_client 401', async () => {
    const wrong = await tokenFor(em.url, { client_secret: 'nope' });
    const unknown = await tokenFor(em.url, { client_id: 'nobody' });
    for (const res of [wrong, unknown]) {
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: 'invalid_client', error_description: 'Client authentication failed.' });
    }
    expect(wrong.text).not.toContain('nope');
  });

  it('refuses another grant type with unsupported_grant_type', async () => {
    const res = await tokenFor(em.url, { grant_type: 'password' });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('unsupported_grant_type');
  });

  it('answers invalid_request for missing fields and a non-form body', async () => {
    const missing = await call('POST', `${em.url}/oauth2/token`, {
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=client_credentials&client_id=dev-client&client_secret=dev-secret',
    });
    expect(missing.status).toBe(400);
    expect(missing.body).toMatchObject({ error: 'invalid_request', error_description: 'audience is required.' });
    const json = await call('POST', `${em.url}/oauth2/token`, { json: { grant_type: 'client_credentials' } });
    expect(json.status).toBe(400);
    expect(json.body.error).toBe('invalid_request');
  });

  it('refuses an audience other than the client tenant with invalid_target', async () => {
    const res = await tokenFor(em.url, { audience: 'other-tenant' });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_target');
  });

  it('accepts client credentials in HTTP Basic', async () => {
    const res = await call('POST', `${em.url}/oauth2/token`, {
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from('dev-client:dev-secret').toString('base64')}` },
      body: 'grant_type=client_credentials&audience=dev-tenant',
    });
    expect(res.status).toBe(200);
  });

  it('rejects an expired token with 401 and WWW-Authenticate', async () => {
    const shortLived = await startEmulator({ port: 0, tokenLifetimeSeconds: 1 });
    try {
      const res = await tokenFor(shortLived.url);
      expect(res.body.expires_in).toBe(1);
      const auth = { authorization: `Bearer ${res.body.access_token}` };
      const expired = await waitFor(
        'the token to expire',
        async () => {
          const answer = await call('POST', `${shortLived.url}/v1/event-destinations/dev-consumer/pull`, { headers: auth });
          return answer.status === 401 ? answer : undefined;
        },
        5_000,
        50,
      );
      expect(expired.headers['www-authenticate']).toContain('invalid_token');
      expect(expired.body).toMatchObject({ status: 401, detail: 'The access token expired.' });
    } finally {
      await shortLived.close();
    }
  });

  it('rejects an unknown or malformed bearer token with 401', async () => {
    const forged = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from('{"aud":"dev-tenant","scope":"read:events"}').toString('base64url')}.x`;
    expect((await pull({ authorization: `Bearer ${forged}` })).status).toBe(401);
    const basic = await pull({ authorization: 'Basic abc' });
    expect(basic.status).toBe(401);
    expect(basic.headers['www-authenticate']).toMatch(/^Bearer/);
  });

  it('accepts an organization API key with every scope, scoped to its tenant', async () => {
    expect((await pull({ 'x-api-key': 'dev-api-key' })).status).toBe(204);
    expect((await pull({ 'x-api-key': 'other-key' }, 'other-consumer')).status).toBe(204);
    // Tenant identity comes only from the credential: dev-consumer does not exist in other-tenant.
    expect((await pull({ 'x-api-key': 'other-key' }, 'dev-consumer')).status).toBe(404);
    expect((await pull({ 'x-api-key': 'wrong-key' })).status).toBe(401);
  });
});
