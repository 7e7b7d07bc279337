import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../src/errors.js';
import { acknowledge, pull, setPaused } from '../../src/client/consumers.js';
import { resolveRetryPolicy } from '../../src/client/retry.js';
import { ClientCredentialsTokenProvider, apiKeyCredential, type Credential } from '../../src/client/token-provider.js';
import { Transport } from '../../src/client/transport.js';
import { SECRET, header, mockPlatform, type MockPlatform } from './mock-platform.js';

let platform: MockPlatform;
let tokens: ClientCredentialsTokenProvider;
beforeEach(() => {
  platform = mockPlatform();
  tokens = new ClientCredentialsTokenProvider({
    authUrl: platform.origin,
    clientId: 'dev-client',
    clientSecret: SECRET,
    audience: 'dev-tenant',
    dispatcher: platform.agent,
  });
});
afterEach(async () => {
  await platform.close();
});

function transport(credential: Credential = tokens): Transport {
  return new Transport({
    baseUrl: platform.origin,
    dispatcher: platform.agent,
    credential,
    retryPolicy: resolveRetryPolicy({ baseDelayMs: 1, maxDelayMs: 2 }),
    userAgent: 'durable-worker-test',
    requestTimeoutMs: 5_000,
  });
}

interface Seen {
  path: string;
  method: string;
  headers: unknown;
  body: string | undefined;
}

/** Answers requests under `prefix` in order with `replies` and records what was sent. */
function script(prefix: string, replies: Array<{ status: number; data?: unknown; headers?: Record<string, string> }>): Seen[] {
  const seen: Seen[] = [];
  for (const reply of replies) {
    platform.pool.intercept({ path: (path) => path.startsWith(prefix), method: () => true }).reply((opts) => {
      seen.push({
        path: opts.path,
        method: opts.method,
        headers: opts.headers,
        body: opts.body === undefined || opts.body === null ? undefined : String(opts.body),
      });
      return {
        statusCode: reply.status,
        data: (reply.data ?? '') as object,
        responseOptions: { headers: { 'content-type': 'application/json', ...reply.headers } },
      };
    });
  }
  return seen;
}

const batch = {
  leaseId: 'lease-1',
  generation: '2',
  attempt: 1,
  extension: 'kept',
  events: [{ specversion: '1.0', id: 'e1', type: 'source_entry.updated', subject: 's', sequence: 41, data: { a: 1 } }],
};

describe('pull', () => {
  it('sends the spec query, a bearer token and no body; encodes the destination id', async () => {
    platform.issueTokens();
    const seen = script('/v1/event-destinations/', [{ status: 200, data: batch }]);
    const result = await pull(transport(), 'dest/1 x', { limit: 50, visibilitySeconds: 30, workerId: 'host-0' });
    expect(seen).toHaveLength(1);
    const url = new URL(seen[0]!.path, platform.origin);
    expect(seen[0]!.method).toBe('POST');
    expect(url.pathname).toBe('/v1/event-destinations/dest%2F1%20x/pull');
    expect(Object.fromEntries(url.searchParams)).toEqual({ limit: '50', visibility: '30', workerId: 'host-0' });
    expect(header(seen[0]!.headers, 'authorization')).toBe('Bearer token-1');
    expect(header(seen[0]!.headers, 'user-agent')).toBe('durable-worker-test');
    expect(header(seen[0]!.headers, 'x-api-key')).toBeUndefined();
    expect(seen[0]!.body ?? '').toBe('');
    expect(result).toEqual({
      status: 200,
      batch: { ...batch, generation: 2, events: [{ ...batch.events[0], sequence: '41' }] },
    });
  });

  it('omits parameters the caller left out (server defaults apply)', async () => {
    platform.issueTokens();
    const seen = script('/v1/event-destinations/d/pull', [{ status: 204 }]);
    await expect(pull(transport(), 'd', {})).resolves.toEqual({ status: 204 });
    expect(new URL(seen[0]!.path, platform.origin).search).toBe('');
  });

  it('maps 409 and 429 (with Retry-After) to results, not errors', async () => {
    platform.issueTokens();
    script('/v1/event-destinations/d/pull', [{ status: 409, data: { title: 'paused' } }, { status: 429, headers: { 'retry-after': '5' } }, { status: 429 }]);
    const client = transport();
    await expect(pull(client, 'd', {})).resolves.toEqual({ status: 409 });
    await expect(pull(client, 'd', {})).resolves.toEqual({ status: 429, retryAfterMs: 5000 });
    await expect(pull(client, 'd', {})).resolves.toEqual({ status: 429 });
  });

  it('throws ApiError with the problem for 400 and does not retry a 503', async () => {
    platform.issueTokens();
    const problem = { type: 'about:blank', title: 'Bad Request', status: 400, detail: 'not a DURABLE_CONSUMER', instance: '/x', traceId: 'abc' };
    const seen = script('/v1/event-destinations/', [{ status: 400, data: problem }, { status: 503 }]);
    await expect(pull(transport(), 'hook', {})).rejects.toMatchObject({ code: ErrorCodes.API, status: 400, problem, method: 'POST' });
    await expect(pull(transport(), 'd', {})).rejects.toMatchObject({ code: ErrorCodes.API, status: 503 });
    expect(seen).toHaveLength(2);
  });

  it('rejects out-of-range parameters before sending anything', async () => {
    const client = transport();
    await expect(pull(client, 'd', { limit: 0 })).rejects.toThrow(/limit must be an integer 1..100 \(got 0\)/);
    await expect(pull(client, 'd', { visibilitySeconds: 601 })).rejects.toThrow(/visibilitySeconds/);
    await expect(pull(client, 'd', { workerId: 'w'.repeat(201) })).rejects.toThrow(/workerId/);
    await expect(pull(client, '', {})).rejects.toThrow(/destinationId/);
    expect(platform.tokenRequests).toHaveLength(0);
  });

  it('rejects a 200 that is not a lease batch', async () => {
    platform.issueTokens();
    script('/v1/event-destinations/d/pull', [{ status: 200, data: { events: [] } }]);
    await expect(pull(transport(), 'd', {})).rejects.toMatchObject({ code: ErrorCodes.API, status: 200 });
  });

  it('makes a connection failure a NetworkError, tried once', async () => {
    platform.issueTokens();
    platform.pool.intercept({ path: (p) => p.startsWith('/v1/'), method: 'POST' }).replyWithError(new Error('connection reset'));
    await expect(pull(transport(), 'd', {})).rejects.toMatchObject({ code: ErrorCodes.NETWORK });
  });

  it('turns a request past its deadline into a retryable NetworkError', async () => {
    platform.issueTokens();
    platform.pool
      .intercept({ path: (p) => p.startsWith('/v1/'), method: 'POST' })
      .reply(204, '')
      .delay(2_000);
    const slow = new Transport({
      baseUrl: platform.origin,
      dispatcher: platform.agent,
      credential: tokens,
      retryPolicy: resolveRetryPolicy(false),
      userAgent: 'durable-worker-test',
      requestTimeoutMs: 50,
    });
    await expect(pull(slow, 'd', {})).rejects.toMatchObject({ code: ErrorCodes.NETWORK, message: expect.stringContaining('within 50 ms') });
  });

  it('rejects with the abort reason, not a NetworkError, when the caller aborts', async () => {
    platform.issueTokens();
    platform.pool
      .intercept({ path: (p) => p.startsWith('/v1/'), method: 'POST' })
      .reply(204, '')
      .delay(1_000);
    const controller = new AbortController();
    const pending = pull(transport(), 'd', {}, controller.signal);
    setImmediate(() => controller.abort());
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
  });
});

describe('acknowledge', () => {
  it('sends exactly {leaseId, generation, status} as JSON and reads the response liberally', async () => {
    platform.issueTokens();
    const seen = script('/v1/event-destinations/d/acknowledge', [{ status: 200, data: { status: 'committed', committed: 41, extra: true } }]);
    const ack = { leaseId: 'lease-1', generation: 2, status: 'ok' as const, stray: 'not sent' };
    await expect(acknowledge(transport(), 'd', ack)).resolves.toEqual({ status: 'committed', committed: '41', extra: true });
    expect(seen[0]!.method).toBe('POST');
    expect(header(seen[0]!.headers, 'content-type')).toBe('application/json');
    expect(JSON.parse(seen[0]!.body!)).toEqual({ leaseId: 'lease-1', generation: 2, status: 'ok' });
  });

  it('keeps committed null before the first commit', async () => {
    platform.issueTokens();
    script('/v1/event-destinations/d/acknowledge', [{ status: 200, data: { status: 'requeued', committed: null } }]);
    await expect(acknowledge(transport(), 'd', { leaseId: 'l', generation: 1, status: 'failed' })).resolves.toEqual({ status: 'requeued', committed: null });
  });

  it('rejects a bad ack before sending', async () => {
    const client = transport();
    await expect(acknowledge(client, 'd', { leaseId: 'l', generation: 1.5, status: 'ok' })).rejects.toThrow(/generation/);
    await expect(acknowledge(client, 'd', { leaseId: 'l', generation: 1, status: 'done' as 'ok' })).rejects.toThrow(/ok.*failed/);
    expect(platform.tokenRequests).toHaveLength(0);
  });
});

describe('401 handling', () => {
  it('refreshes the token once and repeats the request once', async () => {
    platform.issueTokens();
    const seen = script('/v1/event-destinations/d/acknowledge', [
      { status: 401, data: { title: 'Unauthorized', status: 401 } },
      { status: 200, data: { status: 'committed', committed: '7' } },
    ]);
    await expect(acknowledge(transport(), 'd', { leaseId: 'l', generation: 1, status: 'ok' })).resolves.toMatchObject({ status: 'committed' });
    expect(seen.map((s) => header(s.headers, 'authorization'))).toEqual(['Bearer token-1', 'Bearer token-2']);
    expect(platform.tokenRequests).toHaveLength(2);
  });

  it('does not loop: a second 401 is a final ApiError 401', async () => {
    platform.issueTokens();
    const seen = script('/v1/event-destinations/d/pull', [{ status: 401 }, { status: 401 }, { status: 204 }]);
    await expect(pull(transport(), 'd', {})).rejects.toMatchObject({ code: ErrorCodes.API, status: 401 });
    expect(seen).toHaveLength(2);
    expect(platform.tokenRequests).toHaveLength(2);
  });

  it('shares one refresh among concurrent requests refused with the same token', async () => {
    platform.issueTokens();
    const client = transport();
    await tokens.getToken();
    const replies = [...Array(5).fill({ status: 401 }), ...Array(5).fill({ status: 204 })];
    script('/v1/event-destinations/d/pull', replies);
    const results = await Promise.all(Array.from({ length: 5 }, () => pull(client, 'd', {})));
    expect(results).toEqual(Array(5).fill({ status: 204 }));
    expect(platform.tokenRequests).toHaveLength(2);
  });
});

describe('API key', () => {
  it('sends x-api-key, asks the issuer nothing, and treats 401 as final', async () => {
    const seen = script('/v1/event-destinations/d/', [{ status: 204 }, { status: 401 }, { status: 204 }]);
    const client = transport(apiKeyCredential('org-key-123'));
    await expect(pull(client, 'd', {})).resolves.toEqual({ status: 204 });
    expect(header(seen[0]!.headers, 'x-api-key')).toBe('org-key-123');
    expect(header(seen[0]!.headers, 'authorization')).toBeUndefined();
    const err = await pull(client, 'd', {}).catch((caught: unknown) => caught);
    expect(err).toMatchObject({ status: 401 });
    expect(JSON.stringify(err)).not.toContain('org-key-123');
    expect(String(err)).not.toContain('org-key-123');
    expect(seen).toHaveLength(2);
    expect(platform.tokenRequests).toHaveLength(0);
  });
});

describe('pause and resume', () => {
  it('posts to /pause and /resume and retries a 503', async () => {
    platform.issueTokens();
    const seen = script('/v1/event-destinations/', [{ status: 503 }, { status: 200, data: {} }, { status: 204 }]);
    const client = transport();
    await setPaused(client, 'dev-consumer', true);
    await setPaused(client, 'dev-consumer', false);
    expect(seen.map((s) => `${s.method} ${s.path}`)).toEqual([
      'POST /v1/event-destinations/dev-consumer/pause',
      'POST /v1/event-destinations/dev-consumer/pause',
      'POST /v1/event-destinations/dev-consumer/resume',
    ]);
  });

  it('surfaces 404 for an unknown destination', async () => {
    platform.issueTokens();
    script('/v1/event-destinations/', [{ status: 404, data: { title: 'Not Found', status: 404 } }]);
    await expect(setPaused(transport(), 'nope', true)).rejects.toMatchObject({ status: 404, problem: { title: 'Not Found' } });
  });
});

describe('secrets never reach errors', () => {
  it('keeps the token and the secret out of ApiError and NetworkError', async () => {
    platform.issueTokens();
    script('/v1/event-destinations/d/pull', [{ status: 500, data: { title: 'boom', status: 500 } }]);
    platform.pool.intercept({ path: (p) => p.startsWith('/v1/'), method: 'POST' }).replyWithError(new Error('reset'));
    const client = transport();
    const errors = [await pull(client, 'd', {}).catch((e: unknown) => e), await pull(client, 'd', {}).catch((e: unknown) => e)];
    expect(errors.map((e) => (e as { code: string }).code)).toEqual([ErrorCodes.API, ErrorCodes.NETWORK]);
    for (const err of errors) {
      for (const secret of ['token-1', SECRET]) {
        expect(String(err)).not.toContain(secret);
        expect((err as Error).message).not.toContain(secret);
        expect(JSON.stringify(err)).not.toContain(secret);
      }
    }
  });
});
