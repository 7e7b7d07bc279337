import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type PlatformClient } from '../../src/client/index.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';

/**
 * Per-tenant ingest limits from the emulator's JSON config (spec, Limits: request, entry and
 * property-value ceilings and the request rate are tenant-configured; Errors: exceeded ceilings are
 * validation errors naming the configured ceiling, the rate limit is 429 with Retry-After).
 * `limited` has its own limits; `dev-tenant` only the top-level ones.
 */
let emulator: RunningEmulator;
let limited: PlatformClient;
let roomy: PlatformClient;

beforeAll(async () => {
  emulator = await startEmulator({
    port: 0,
    config: {
      ingestLimits: { maxEntrySizeBytes: 4096 },
      tenants: [
        {
          id: 'limited',
          ingestLimits: { maxRequestBytes: 3000, maxEntrySizeBytes: 1500, maxPropertyValueBytes: 100, requestsPerMinute: 3, importRequestsPerMinute: 1 },
        },
      ],
      applications: [{ tenant: 'limited', clientId: 'limited-app', clientSecret: 'limited-secret' }],
    },
  });
  // validate: false sends the request as given, so the server's own checks answer.
  limited = createClient({ baseUrl: emulator.url, tenant: 'limited', clientId: 'limited-app', clientSecret: 'limited-secret', retry: false });
  roomy = createClient({ baseUrl: emulator.url, tenant: 'dev-tenant', clientId: 'dev-client', clientSecret: 'dev-secret', retry: false });
});
afterAll(async () => {
  await limited?.close();
  await roomy?.close();
  await emulator?.close();
});

const one = (value: string, id = 'e1') => ({ entries: [{ id, properties: [{ id: 'text', value }] }] });

async function problemOf(call: Promise<unknown>): Promise<{ status: number; errors: Record<string, string[]>; retryAfterMs?: number }> {
  const err = (await call.catch((e: unknown) => e)) as { status: number; problem?: { errors?: Record<string, string[]> }; retryAfterMs?: number };
  return { status: err.status, errors: err.problem?.errors ?? {}, ...(err.retryAfterMs === undefined ? {} : { retryAfterMs: err.retryAfterMs }) };
}

describe('per-tenant ingest limits from config', () => {
  // Each ceiling test uses a fresh source; the rate test runs last (it spends the tenant's budget).
  it('a property value above the tenant ceiling is 400 naming maxPropertyValueBytes and its value', async () => {
    const answer = await problemOf(limited.ingest(`s-${randomUUID()}`, one('x'.repeat(101)), { validate: false }));
    expect(answer.status).toBe(400);
    expect(answer.errors['entries[0].properties[0].value']?.[0]).toMatch(/ceiling of 100 bytes \(maxPropertyValueBytes\)/);
  });

  it('an entry above the tenant ceiling is 400 naming maxEntrySizeBytes and its value', async () => {
    const entry = { id: 'big', properties: Array.from({ length: 20 }, (_, i) => ({ id: `p${i}`, value: 'y'.repeat(90) })) };
    const answer = await problemOf(limited.ingest(`s-${randomUUID()}`, { entries: [entry] }, { validate: false }));
    expect(answer.status).toBe(400);
    expect(answer.errors['entries[0]']?.[0]).toMatch(/ceiling of 1500 bytes \(maxEntrySizeBytes\)/);
  });

  it('a request above the tenant ceiling is 400 naming maxRequestBytes and its value', async () => {
    const entries = Array.from({ length: 40 }, (_, i) => ({ id: `e${i}`, properties: [{ id: 'text', value: 'z'.repeat(80) }] }));
    const answer = await problemOf(limited.ingest(`s-${randomUUID()}`, { entries }, { validate: false }));
    expect(answer.status).toBe(400);
    expect(answer.errors.$?.[0]).toMatch(/ceiling of 3000 bytes \(maxRequestBytes\)/);
  });

  it('another tenant gets the top-level limits, not those of `limited`', async () => {
    await expect(roomy.ingest(`s-${randomUUID()}`, one('x'.repeat(1000)), { validate: false })).resolves.toMatchObject({ acceptedEntryCount: 1 });
    const entry = { id: 'big', properties: [{ id: 'text', value: 'q'.repeat(5000) }] };
    const answer = await problemOf(roomy.ingest(`s-${randomUUID()}`, { entries: [entry] }, { validate: false }));
    expect(answer.errors['entries[0]']?.[0]).toMatch(/ceiling of 4096 bytes/);
  });

  it('legacy import beyond the tenant importRequestsPerMinute is 429 with Retry-After; verify never counts', async () => {
    const body = { entries: [{ id: 'a', properties: { t: 'x' } }] };
    for (let i = 0; i < 3; i++) await limited.legacyImport.verify('legacy', body);
    await expect(limited.legacyImport.import('legacy', body)).resolves.toMatchObject({ acceptedEntryCount: 1 });
    const answer = await problemOf(limited.legacyImport.import('legacy', body));
    expect(answer.status).toBe(429);
    expect(answer.retryAfterMs).toBeGreaterThanOrEqual(1000);
  });

  it('typed ingest beyond the tenant requestsPerMinute is 429 with Retry-After (integer seconds >= 1)', async () => {
    // Every request counts, valid or not; earlier tests may have spent part of the budget of 3.
    let accepted = 0;
    let refused: unknown;
    for (let i = 0; i < 4 && refused === undefined; i++) {
      await limited.ingest(`s-${randomUUID()}`, one('ok')).then(
        () => accepted++,
        (err: unknown) => (refused = err),
      );
    }
    expect(accepted).toBeLessThanOrEqual(3);
    const answer = await problemOf(Promise.reject(refused));
    expect(answer.status).toBe(429);
    expect(answer.retryAfterMs).toBeGreaterThanOrEqual(1000);
    expect(answer.retryAfterMs! % 1000).toBe(0);
    // The rate is per tenant: dev-tenant has no rate limit configured.
    await expect(roomy.ingest(`s-${randomUUID()}`, one('ok'))).resolves.toMatchObject({ acceptedEntryCount: 1 });
  });

  it('a bad limit in the config is a ConfigError naming the field', async () => {
    await expect(startEmulator({ port: 0, config: { ingestLimits: { requestsPerMinute: 0 } } })).rejects.toMatchObject({
      code: 'DW_ERR_CONFIG',
      message: expect.stringMatching(/ingestLimits\.requestsPerMinute/),
    });
  });
});
