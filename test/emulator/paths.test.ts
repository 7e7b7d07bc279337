/**
 * Which paths name a resource, as the OpenAPI description implies: one per template, with no empty
 * segment, and a concrete segment before a template one (`…/v1/openapi` is not an endpoint named
 * `openapi`).
 */
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { tokenFor } from './helpers.js';

let emulator: RunningEmulator;
let auth: Record<string, string>;

beforeAll(async () => {
  emulator = await startEmulator({ port: 0, logger: pino({ level: 'silent' }) });
  const token = await tokenFor(emulator.url);
  expect(token.status).toBe(200);
  auth = { authorization: `Bearer ${token.body.access_token}` };
  const seeded = await fetch(`${emulator.url}/_emulator/destinations`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ customer: 'acme', destination: 'shop', sourceId: 'products', endpoints: [{ name: 'items' }] }),
  });
  expect(seeded.status).toBe(201);
});

afterAll(async () => {
  await emulator?.close();
});

describe('paths', () => {
  it('a path with an empty segment names no resource: 404 problem, where the normal path answers 200', async () => {
    expect((await fetch(`${emulator.url}/v1/managed-tags`, { headers: auth })).status).toBe(200);
    for (const path of ['//v1//managed-tags', '//v1/managed-tags', '/v1//managed-tags', '/v1/managed-tags/', '/acme//shop/v1/items', '/acme/shop/v1/items/']) {
      const res = await fetch(`${emulator.url}${path}`, { headers: auth });
      expect(res.status, path).toBe(404);
      expect(res.headers.get('content-type'), path).toContain('application/problem+json');
    }
  });

  it("a destination's /v1/openapi takes GET only: 405 with Allow: GET for any other method", async () => {
    expect((await fetch(`${emulator.url}/acme/shop/v1/openapi`)).status).toBe(200);
    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) {
      const res = await fetch(`${emulator.url}/acme/shop/v1/openapi`, {
        method,
        headers: { 'content-type': 'application/json' },
        ...(method === 'DELETE' ? {} : { body: '{}' }),
      });
      expect(res.status, method).toBe(405);
      expect(res.headers.get('allow'), method).toBe('GET');
    }
    // The endpoints themselves still take GET and POST.
    expect((await fetch(`${emulator.url}/acme/shop/v1/items`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).status).toBe(
      200,
    );
    const put = await fetch(`${emulator.url}/acme/shop/v1/items`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(put.status).toBe(405);
    expect(put.headers.get('allow')).toBe('GET, POST');
  });
});
