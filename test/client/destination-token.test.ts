import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MockAgent } from 'undici';
import { ErrorCodes } from '../../src/errors.js';
import { DestinationTokenProvider, destinationTokenRefreshAfterMs } from '../../src/client/index.js';

/**
 * Exact request shapes and failure injection of the destination token endpoint (MockAgent):
 * caching counts, single flight, expiry, 429 Retry-After. Behaviour against the real emulator is
 * in destinations.test.ts.
 */
const ORIGIN = 'http://destinations.test';
const SECRET = 'dst-s3cret-value';
let agent: MockAgent;
let bodies: Array<Record<string, unknown>>;
let clock: { nowMs: number };
let sleeps: number[];

beforeEach(() => {
  agent = new MockAgent();
  agent.disableNetConnect();
  bodies = [];
  clock = { nowMs: 1_000_000 };
  sleeps = [];
});
afterEach(() => agent.close());

function provider(overrides: Partial<ConstructorParameters<typeof DestinationTokenProvider>[0]> = {}) {
  return new DestinationTokenProvider({
    destinationsUrl: ORIGIN,
    destinationId: 'shop api',
    clientId: 'app-1',
    clientSecret: SECRET,
    dispatcher: agent,
    now: () => clock.nowMs,
    sleep: async (ms) => {
      sleeps.push(ms);
      clock.nowMs += ms;
    },
    ...overrides,
  });
}

function answerTokens(times: number, expiresIn = 86_400): void {
  agent
    .get(ORIGIN)
    .intercept({ path: '/destinations/shop%20api/token', method: 'POST' })
    .reply((opts) => {
      bodies.push(JSON.parse(String(opts.body)) as Record<string, unknown>);
      return {
        statusCode: 200,
        data: { accessToken: `tok-${bodies.length}`, expiresIn },
        responseOptions: { headers: { 'content-type': 'application/json' } },
      };
    })
    .times(times);
}

function answer429(retryAfter: string): void {
  agent
    .get(ORIGIN)
    .intercept({ path: '/destinations/shop%20api/token', method: 'POST' })
    .reply(429, { title: 'Too Many Requests', status: 429 }, { headers: { 'retry-after': retryAfter, 'content-type': 'application/problem+json' } });
}

describe('destination token provider', () => {
  it('posts {clientId, clientSecret} as JSON to /destinations/{id}/token (id URL-encoded)', async () => {
    answerTokens(1);
    await expect(provider().getToken()).resolves.toBe('tok-1');
    expect(bodies).toEqual([{ clientId: 'app-1', clientSecret: SECRET }]);
  });

  it('reuses the token until just before expiresIn runs out, then asks once more', async () => {
    answerTokens(2);
    const tokens = provider();
    for (let i = 0; i < 20; i++) expect(await tokens.getToken()).toBe('tok-1');
    clock.nowMs += destinationTokenRefreshAfterMs(86_400) - 1;
    expect(await tokens.getToken()).toBe('tok-1');
    expect(tokens.requestCount).toBe(1);
    clock.nowMs += 1;
    expect(await tokens.getToken()).toBe('tok-2');
    expect(tokens.requestCount).toBe(2);
  });

  it('refreshes one minute before a 24 h expiry, at 90 % of a short life', () => {
    expect(destinationTokenRefreshAfterMs(86_400)).toBe(86_400_000 - 60_000);
    expect(destinationTokenRefreshAfterMs(100)).toBe(90_000);
  });

  it('single flight: concurrent callers share one token request', async () => {
    answerTokens(1);
    const tokens = provider();
    const all = await Promise.all(Array.from({ length: 25 }, () => tokens.getToken()));
    expect(new Set(all)).toEqual(new Set(['tok-1']));
    expect(tokens.requestCount).toBe(1);
  });

  it('a 401 from the destination drops that token so the next call fetches a new one', async () => {
    answerTokens(2);
    const tokens = provider();
    const applied = await tokens.apply();
    tokens.invalidate(applied);
    expect(await tokens.getToken()).toBe('tok-2');
  });

  it('429: sleeps the Retry-After once and retries', async () => {
    answer429('7');
    answerTokens(1);
    const tokens = provider();
    await expect(tokens.getToken()).resolves.toBe('tok-1');
    expect(sleeps).toEqual([7000]);
    expect(tokens.requestCount).toBe(2);
  });

  it('429 with a Retry-After beyond the cap fails at once, and asks nothing more until it passes', async () => {
    answer429('3600');
    const tokens = provider({ maxRetryAfterMs: 60_000 });
    const err = await tokens.getToken().catch((e: unknown) => e);
    expect(err).toMatchObject({ code: ErrorCodes.AUTH, status: 429, retryAfterMs: 3_600_000 });
    expect(String(err) + JSON.stringify(err)).not.toContain(SECRET);
    // No interceptor is left: a second request would throw a MockAgent error, not this AuthError.
    clock.nowMs += 1_800_000;
    await expect(tokens.getToken()).rejects.toMatchObject({ status: 429 });
    expect(tokens.requestCount).toBe(1);
    clock.nowMs += 1_800_000;
    answerTokens(1);
    await expect(tokens.getToken()).resolves.toBe('tok-1');
    expect(sleeps).toEqual([]);
  });

  it('a response without accessToken or expiresIn is AuthError', async () => {
    agent.get(ORIGIN).intercept({ path: '/destinations/shop%20api/token', method: 'POST' }).reply(200, { accessToken: 'x' });
    await expect(provider().getToken()).rejects.toMatchObject({ code: ErrorCodes.AUTH, message: expect.stringMatching(/expiresIn/) });
  });
});
