import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../src/errors.js';
import { isRetryable } from '../../src/client/errors.js';
import { ClientCredentialsTokenProvider, refreshAfterMs, type ClientCredentialsOptions } from '../../src/client/token-provider.js';
import { SECRET, header, json, mockPlatform, type MockPlatform } from './mock-platform.js';

let platform: MockPlatform;
beforeEach(() => {
  platform = mockPlatform();
});
afterEach(async () => {
  await platform.close();
});

function provider(overrides: Partial<ClientCredentialsOptions> = {}): ClientCredentialsTokenProvider {
  return new ClientCredentialsTokenProvider({
    authUrl: platform.origin,
    clientId: 'dev-client',
    clientSecret: SECRET,
    audience: 'tenant-a',
    dispatcher: platform.agent,
    ...overrides,
  });
}

function expectNoSecret(err: unknown, ...secrets: string[]): void {
  for (const secret of secrets) {
    expect(String(err)).not.toContain(secret);
    expect((err as Error).message).not.toContain(secret);
    expect(JSON.stringify(err)).not.toContain(secret);
    expect((err as Error).stack ?? '').not.toContain(secret);
  }
}

describe('refreshAfterMs', () => {
  it('refreshes at 80 % of life or 60 s before expiry, whichever is sooner, never before half-life', () => {
    expect(refreshAfterMs(3600)).toBe(2_880_000);
    expect(refreshAfterMs(300)).toBe(240_000);
    expect(refreshAfterMs(200)).toBe(140_000);
    expect(refreshAfterMs(100)).toBe(50_000);
    expect(refreshAfterMs(60)).toBe(30_000);
  });
});

describe('ClientCredentialsTokenProvider', () => {
  it('posts the spec form fields to {authUrl}/oauth2/token', async () => {
    let seen: { headers: unknown; body: string; path: string } | undefined;
    platform.pool.intercept({ path: '/auth/oauth2/token', method: 'POST' }).reply((opts) => {
      seen = { headers: opts.headers, body: String(opts.body), path: opts.path };
      return { statusCode: 200, data: { access_token: 'tok-1', token_type: 'Bearer', expires_in: 3600, scope: 'read:events' }, responseOptions: json };
    });
    const tokens = provider({ authUrl: `${platform.origin}/auth/`, scope: 'read:events write:sources' });
    await expect(tokens.getToken()).resolves.toBe('tok-1');
    expect(seen?.path).toBe('/auth/oauth2/token');
    expect(header(seen?.headers, 'content-type')).toBe('application/x-www-form-urlencoded');
    expect(Object.fromEntries(new URLSearchParams(seen?.body))).toEqual({
      grant_type: 'client_credentials',
      client_id: 'dev-client',
      client_secret: SECRET,
      audience: 'tenant-a',
      scope: 'read:events write:sources',
    });
  });

  it('leaves scope out when none is configured', async () => {
    platform.issueTokens();
    await provider().getToken();
    expect(platform.tokenRequests[0]).not.toHaveProperty('scope');
    expect(platform.tokenRequests[0]?.audience).toBe('tenant-a');
  });

  it('caches the token until its refresh point, then fetches a new one', async () => {
    platform.issueTokens(3600);
    let nowMs = 1_000_000;
    const tokens = provider({ now: () => nowMs });
    expect(await tokens.getToken()).toBe('token-1');
    nowMs += 2_879_999;
    expect(await tokens.getToken()).toBe('token-1');
    expect(platform.tokenRequests).toHaveLength(1);
    nowMs += 1;
    expect(await tokens.getToken()).toBe('token-2');
    expect(platform.tokenRequests).toHaveLength(2);
  });

  it('shares one in-flight request among concurrent callers', async () => {
    platform.pool
      .intercept({ path: '/oauth2/token', method: 'POST' })
      .reply(200, { access_token: 'shared', token_type: 'Bearer', expires_in: 3600, scope: '' }, json)
      .delay(30);
    const tokens = provider();
    const results = await Promise.all(Array.from({ length: 10 }, () => tokens.getToken()));
    expect(results).toEqual(Array(10).fill('shared'));
    expect(tokens.requestCount).toBe(1);
  });

  it('lets one caller abort its wait without failing the others', async () => {
    platform.pool
      .intercept({ path: '/oauth2/token', method: 'POST' })
      .reply(200, { access_token: 'late', token_type: 'Bearer', expires_in: 3600, scope: '' }, json)
      .delay(50);
    const tokens = provider();
    const controller = new AbortController();
    const impatient = tokens.getToken(controller.signal);
    const patient = tokens.getToken();
    controller.abort();
    await expect(impatient).rejects.toMatchObject({ name: 'AbortError' });
    await expect(patient).resolves.toBe('late');
    expect(tokens.requestCount).toBe(1);
  });

  it('invalidate drops only the token it names', async () => {
    platform.issueTokens();
    const tokens = provider();
    const first = await tokens.getToken();
    tokens.invalidateToken('some-older-token');
    expect(await tokens.getToken()).toBe(first);
    tokens.invalidateToken(first);
    expect(await tokens.getToken()).toBe('token-2');
    expect(platform.tokenRequests).toHaveLength(2);
  });

  it('reads a lazy secret at every token request', async () => {
    platform.issueTokens();
    let reads = 0;
    const tokens = provider({ clientSecret: () => `rotated-${++reads}` });
    tokens.invalidateToken(await tokens.getToken());
    await tokens.getToken();
    expect(platform.tokenRequests.map((form) => form.client_secret)).toEqual(['rotated-1', 'rotated-2']);
  });

  it('turns an issuer refusal into AuthError with the issuer body, never the secret', async () => {
    platform.pool
      .intercept({ path: '/oauth2/token', method: 'POST' })
      .reply(401, { error: 'invalid_client', error_description: `client secret ${SECRET} is wrong` }, json);
    const err = await provider()
      .getToken()
      .catch((caught: unknown) => caught);
    expect(err).toMatchObject({ code: ErrorCodes.AUTH, status: 401, issuer: { error: 'invalid_client' } });
    expect((err as Error).message).toContain('invalid_client');
    expect(isRetryable(err)).toBe(false);
    expectNoSecret(err, SECRET);
  });

  it('classifies an issuer 503 as retryable AuthError carrying Retry-After', async () => {
    platform.pool.intercept({ path: '/oauth2/token', method: 'POST' }).reply(503, 'unavailable', { headers: { 'retry-after': '2' } });
    const err = await provider()
      .getToken()
      .catch((caught: unknown) => caught);
    expect(err).toMatchObject({ code: ErrorCodes.AUTH, status: 503, retryAfterMs: 2000, issuer: undefined });
    expect(isRetryable(err)).toBe(true);
  });

  it('rejects a 200 without access_token or with a non-Bearer token type', async () => {
    platform.pool.intercept({ path: '/oauth2/token', method: 'POST' }).reply(200, { token_type: 'Bearer', expires_in: 60 }, json);
    platform.pool.intercept({ path: '/oauth2/token', method: 'POST' }).reply(200, { access_token: 'x', token_type: 'MAC', expires_in: 60 }, json);
    await expect(provider().getToken()).rejects.toMatchObject({ code: ErrorCodes.AUTH, message: expect.stringContaining('access_token') });
    await expect(provider().getToken()).rejects.toMatchObject({ code: ErrorCodes.AUTH, message: expect.stringContaining('MAC') });
  });

  it('accepts expires_in as a numeric string (liberal reading)', async () => {
    platform.pool.intercept({ path: '/oauth2/token', method: 'POST' }).reply(200, { access_token: 'str', token_type: 'bearer', expires_in: '120' }, json);
    let nowMs = 0;
    const tokens = provider({ now: () => nowMs });
    expect(await tokens.getToken()).toBe('str');
    nowMs = 59_000;
    expect(await tokens.getToken()).toBe('str');
    expect(tokens.requestCount).toBe(1);
  });

  it('makes a connection failure a NetworkError without the secret', async () => {
    platform.pool.intercept({ path: '/oauth2/token', method: 'POST' }).replyWithError(new Error('socket hang up'));
    const err = await provider()
      .getToken()
      .catch((caught: unknown) => caught);
    expect(err).toMatchObject({ code: ErrorCodes.NETWORK, path: '/oauth2/token' });
    expect(isRetryable(err)).toBe(true);
    expectNoSecret(err, SECRET);
  });
});
