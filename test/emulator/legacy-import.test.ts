import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { registerLegacyImportRoutes, type LegacyImportEntry } from '../../src/emulator/legacy-import/index.js';
import { startHarness, type Harness } from './tags-harness.js';

let h: Harness;
let queued: Array<{ tenant: string; dataSource: string; entries: LegacyImportEntry[] }>;
const clock = { nowMs: Date.parse('2025-01-01T00:00:00Z') };
beforeEach(async () => {
  queued = [];
  h = await startHarness((ctx) =>
    registerLegacyImportRoutes(ctx, {
      enqueueImport: (tenant, dataSource, entries) => void queued.push({ tenant, dataSource, entries }),
      sourceExists: (_tenant, id) => id !== 'missing',
      importRequestsPerMinute: 3,
      nowMs: () => clock.nowMs,
    }),
  );
});
afterEach(() => h.close());

const good = {
  entries: [
    { id: 'A1', properties: { Title: 'Shirt', color: 'red', old: null } },
    { id: 'a2', properties: {} },
  ],
};

function call(path: string, body: unknown, headers: Record<string, string>): Promise<Response> {
  return fetch(`${h.baseUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
}

const asImporter = (tenant: string) => ({ 'x-test-tenant': tenant, 'x-test-scopes': 'import-datasource' });

describe('legacy import', () => {
  it('import answers 202 and queues the entries with lowercase property IDs', async () => {
    const tenant = `t-${randomUUID()}`;
    const res = await call('/datasources/products/import', good, asImporter(tenant));
    expect(res.status).toBe(202);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toEqual({
      correlationId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      dataSource: 'products',
      acceptedAt: '2025-01-01T00:00:00.000Z',
      acceptedEntryCount: 2,
    });
    expect(queued).toEqual([
      {
        tenant,
        dataSource: 'products',
        entries: [
          { id: 'A1', properties: { title: 'Shirt', color: 'red', old: null } },
          { id: 'a2', properties: {} },
        ],
      },
    ]);
  });

  it('verify validates without queueing', async () => {
    const res = await call('/datasources/products/import/verify', good, asImporter('t'));
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ dataSource: 'products', valid: true, entryCount: 2 });
    expect(queued).toEqual([]);
  });

  it('bad input is a 400 problem keyed by path, for verify and import alike, nothing queued', async () => {
    const bad = { entries: [{ id: 'x', properties: { n: 5 } }, { id: 'X' }, { properties: {} }] };
    for (const path of ['/datasources/s/import/verify', '/datasources/s/import']) {
      const res = await call(path, bad, asImporter(`t-${randomUUID()}`));
      expect(res.status).toBe(400);
      const problem = (await res.json()) as { errors: Record<string, string[]> };
      expect(Object.keys(problem.errors).sort()).toEqual(['entries[0].properties.n', 'entries[1].id', 'entries[2].id']);
    }
    expect((await call('/datasources/s/import', { entries: [] }, asImporter('t'))).status).toBe(400);
    expect(queued).toEqual([]);
  });

  it('accepts write:sources as well as import-datasource; other scopes get 403, no credential 401', async () => {
    expect((await call('/datasources/s/import', good, { 'x-test-tenant': `t-${randomUUID()}`, 'x-test-scopes': 'write:sources' })).status).toBe(202);
    expect((await call('/datasources/s/import', good, { 'x-test-tenant': 't', 'x-test-scopes': 'read:events' })).status).toBe(403);
    expect((await call('/datasources/s/import/verify', good, {})).status).toBe(401);
  });

  it('a data-provider credential reaches only its assigned sources', async () => {
    const headers = { ...asImporter(`t-${randomUUID()}`), 'x-test-sources': 'mine' };
    expect((await call('/datasources/mine/import', good, headers)).status).toBe(202);
    expect((await call('/datasources/theirs/import', good, headers)).status).toBe(403);
    expect((await call('/datasources/theirs/import/verify', good, headers)).status).toBe(403);
  });

  it('an unknown source is a 404', async () => {
    expect((await call('/datasources/missing/import', good, asImporter('t'))).status).toBe(404);
  });

  it('import consumes the per-tenant rate budget (429 with Retry-After); verify does not', async () => {
    const tenant = `t-${randomUUID()}`;
    const start = clock.nowMs;
    for (let i = 0; i < 5; i++) expect((await call('/datasources/s/import/verify', good, asImporter(tenant))).status).toBe(200);
    for (let i = 0; i < 3; i++) {
      clock.nowMs = start + i * 10_000;
      expect((await call('/datasources/s/import', good, asImporter(tenant))).status).toBe(202);
    }
    const limited = await call('/datasources/s/import', good, asImporter(tenant));
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('40');
    expect((await call('/datasources/s/import/verify', good, asImporter(tenant))).status).toBe(200);
    clock.nowMs = start + 60_001;
    expect((await call('/datasources/s/import', good, asImporter(tenant))).status).toBe(202);
    clock.nowMs = start;
  });
});
