import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';

/**
 * The ingest OpenAPI 3.1 description served at /openapi.json (spec, Versioning 4), and real
 * emulator answers validated against it. The served JSON Schemas are turned back into validators
 * with zod's own `z.fromJSONSchema` (no extra validator dependency), so what is checked is the
 * published document, not the in-memory schemas it was generated from.
 */
type Doc = { openapi: string; info: { version: string }; paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema: { $ref: string } }> }> }>>; components: { schemas: Record<string, unknown> } };

let emulator: RunningEmulator;
let doc: Doc;
let token: string;

beforeAll(async () => {
  emulator = await startEmulator({ port: 0, config: { tenants: [{ id: 'dev-tenant', ingestLimits: { requestsPerMinute: 1000 } }], ingestLimits: {} } });
  doc = (await (await fetch(`${emulator.url}/openapi.json`)).json()) as Doc;
  const form = new URLSearchParams({ grant_type: 'client_credentials', client_id: 'dev-client', client_secret: 'dev-secret', audience: 'dev-tenant' });
  token = ((await (await fetch(`${emulator.url}/oauth2/token`, { method: 'POST', body: form })).json()) as { access_token: string }).access_token;
});
afterAll(() => emulator?.close());

/** The schema the document declares for `status` of `method path`, as a zod validator. */
function responseValidator(path: string, method: string, status: string): z.ZodType {
  const response = doc.paths[path]?.[method]?.responses[status];
  expect(response, `${method.toUpperCase()} ${path} declares ${status}`).toBeDefined();
  const media = Object.values(response!.content ?? {})[0];
  const name = media!.schema.$ref.replace('#/components/schemas/', '');
  return z.fromJSONSchema(doc.components.schemas[name] as Parameters<typeof z.fromJSONSchema>[0]);
}

async function post(path: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: unknown; contentType: string }> {
  const res = await fetch(`${emulator.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json(), contentType: res.headers.get('content-type') ?? '' };
}

function expectValid(validator: z.ZodType, body: unknown): void {
  const result = validator.safeParse(body);
  expect(result.success, result.success ? '' : z.prettifyError(result.error)).toBe(true);
}

describe('ingest OpenAPI description', () => {
  it('is OpenAPI 3.1 with version 1.0.0 and describes typed ingest and legacy import', () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info.version).toBe('1.0.0');
    expect(Object.keys(doc.paths).sort()).toEqual(['/datasources/{dataSource}/import', '/datasources/{dataSource}/import/verify', '/sources/{sourceId}']);
  });

  it('a real 202 typed ingest answer matches TypedIngestResponse', async () => {
    const answer = await post(`/sources/s-${randomUUID()}`, { entries: [{ id: 'a', properties: [{ id: 'n', value: 1 }, { id: 'l', value: ['x', 'y'] }] }] });
    expect(answer.status).toBe(202);
    expectValid(responseValidator('/sources/{sourceId}', 'post', '202'), answer.body);
  });

  it('real 400, 401, 415 answers match their problem schemas', async () => {
    const invalid = await post(`/sources/s-${randomUUID()}`, { entries: [] });
    expect(invalid.status).toBe(400);
    expect(invalid.contentType).toMatch(/application\/problem\+json/);
    expectValid(responseValidator('/sources/{sourceId}', 'post', '400'), invalid.body);
    const unauthenticated = await post(`/sources/s-${randomUUID()}`, { entries: [] }, { authorization: 'Bearer nope' });
    expect(unauthenticated.status).toBe(401);
    expectValid(responseValidator('/sources/{sourceId}', 'post', '401'), unauthenticated.body);
    const notJson = await post(`/sources/s-${randomUUID()}`, 'x', { 'content-type': 'text/plain' });
    expect(notJson.status).toBe(415);
    expectValid(responseValidator('/sources/{sourceId}', 'post', '415'), notJson.body);
  });

  it('the validation problem schema requires errors (spec: required in that shape)', () => {
    const validator = responseValidator('/sources/{sourceId}', 'post', '400');
    expect(validator.safeParse({ type: 'about:blank', title: 'Bad Request', status: 400, detail: '', instance: '/x', traceId: '0'.repeat(32) }).success).toBe(false);
  });

  // The schema is structural; rules needing the whole request or the configuration (inference,
  // duplicates, types) are described in prose and enforced by validate.ts.
  it('the request schema accepts and refuses what the emulator accepts and refuses structurally', async () => {
    const request = z.fromJSONSchema(doc.components.schemas.TypedIngestRequest as Parameters<typeof z.fromJSONSchema>[0]);
    const cases: Array<[unknown, boolean]> = [
      [{ entries: [{ id: 'a', properties: [{ id: 't', value: 'x' }] }] }, true],
      [{ entries: [{ id: 'a', properties: [{ id: 't', value: true }], extra: 'ignored' }] }, true],
      [{ entries: [] }, false],
      [{ entries: [{ id: '', properties: [] }] }, false],
      [{ entries: [{ id: 'a', properties: [{ id: 't' }] }] }, false],
      [{ entries: [{ id: 'a', properties: [{ id: 't', value: { nested: 1 } }] }] }, false],
    ];
    for (const [body, ok] of cases) {
      expect(request.safeParse(body).success, JSON.stringify(body)).toBe(ok);
      const answer = await post(`/sources/s-${randomUUID()}`, body);
      expect(answer.status, JSON.stringify(body)).toBe(ok ? 202 : 400);
    }
  });

  it('real legacy import answers match LegacyImportVerified and LegacyImportAccepted', async () => {
    const body = { entries: [{ id: 'a', properties: { t: 'x' } }] };
    const verified = await post('/datasources/legacy/import/verify', body);
    expect(verified.status).toBe(200);
    expectValid(responseValidator('/datasources/{dataSource}/import/verify', 'post', '200'), verified.body);
    const accepted = await post('/datasources/legacy/import', body);
    expect(accepted.status).toBe(202);
    expectValid(responseValidator('/datasources/{dataSource}/import', 'post', '202'), accepted.body);
  });

  it('a real 429 answer matches its schema and carries Retry-After', async () => {
    const limited = await startEmulator({ port: 0, config: { ingestLimits: { requestsPerMinute: 1 } } });
    try {
      const form = new URLSearchParams({ grant_type: 'client_credentials', client_id: 'dev-client', client_secret: 'dev-secret', audience: 'dev-tenant' });
      const bearer = ((await (await fetch(`${limited.url}/oauth2/token`, { method: 'POST', body: form })).json()) as { access_token: string }).access_token;
      const send = () =>
        fetch(`${limited.url}/sources/s1`, { method: 'POST', headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' }, body: JSON.stringify({ entries: [{ id: 'a', properties: [] }] }) });
      expect((await send()).status).toBe(202);
      const refused = await send();
      expect(refused.status).toBe(429);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expectValid(responseValidator('/sources/{sourceId}', 'post', '429'), await refused.json());
    } finally {
      await limited.close();
    }
  });
});
