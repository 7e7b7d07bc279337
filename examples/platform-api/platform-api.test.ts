import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, startEmulator, startWorker, type PlatformClient, type RunningEmulator } from '../../src/index.js';

/**
 * The two examples against the in-process emulator: the handler (run by a real worker, in-process
 * isolation) and the destination query script (its exported function, what `main` prints).
 */
const HANDLERS = fileURLToPath(new URL('./handlers', import.meta.url));

let emulator: RunningEmulator;
let api: PlatformClient;
let scratch: string;

beforeAll(async () => {
  emulator = await startEmulator({ port: 0 });
  api = createClient({ baseUrl: emulator.url, tenant: 'dev-tenant', clientId: 'dev-client', clientSecret: 'dev-secret' });
  scratch = mkdtempSync(join(tmpdir(), 'platform-api-example-'));
});
afterAll(async () => {
  await api?.close();
  await emulator?.close();
  rmSync(scratch, { recursive: true, force: true });
});

describe('examples/platform-api', () => {
  it('the handler reads each updated product and writes its summary to another source', async () => {
    // The handler module builds its client from the worker's environment variables.
    const source = `products-${randomUUID()}`;
    const target = `summaries-${randomUUID()}`;
    Object.assign(process.env, {
      DURABLE_WORKER_BASE_URL: emulator.url,
      DURABLE_WORKER_TENANT: 'dev-tenant',
      DURABLE_WORKER_CLIENT_ID: 'dev-client',
      DURABLE_WORKER_CLIENT_SECRET: 'dev-secret',
      EXAMPLE_SOURCE: source,
      EXAMPLE_TARGET: target,
    });
    const worker = await startWorker({
      baseUrl: emulator.url,
      tenant: 'dev-tenant',
      clientId: 'dev-client',
      clientSecret: 'dev-secret',
      destination: 'dev-consumer',
      handlers: HANDLERS,
      isolation: 'none',
      idempotency: 'memory',
      deadLetter: `file:${join(scratch, 'dead.jsonl')}`,
      metricsPort: 0,
      metricsHost: '127.0.0.1',
      logLevel: 'silent',
    });
    try {
      await api.ingest(source, {
        entries: [
          {
            id: 'kettle',
            properties: [
              { id: 'name', value: 'Kettle' },
              { id: 'price', value: 20 },
            ],
          },
          {
            id: 'mug',
            properties: [
              { id: 'name', value: 'Mug' },
              { id: 'price', value: 4.4 },
            ],
          },
        ],
      });
      const deadline = Date.now() + 10_000;
      let summaries = await api.getEntries(target, ['kettle', 'mug']).catch(() => ({ items: [] }));
      while (summaries.items.length < 2 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        summaries = await api.getEntries(target, ['kettle', 'mug']).catch(() => ({ items: [] }));
      }
      const byId = Object.fromEntries(summaries.items.map((e) => [e.id, Object.fromEntries(e.properties.map((p) => [p.id, p.value]))]));
      expect(byId).toEqual({
        kettle: { grosspricecents: 2500, label: 'Kettle: 25.00 incl. VAT' },
        mug: { grosspricecents: 550, label: 'Mug: 5.50 incl. VAT' },
      });
    } finally {
      await worker.close();
      for (const key of [
        'DURABLE_WORKER_BASE_URL',
        'DURABLE_WORKER_TENANT',
        'DURABLE_WORKER_CLIENT_ID',
        'DURABLE_WORKER_CLIENT_SECRET',
        'EXAMPLE_SOURCE',
        'EXAMPLE_TARGET',
      ]) {
        delete process.env[key];
      }
    }
  });

  it('the query script filters with must/must_not and an operator, and reads facet counts', async () => {
    const source = `shop-${randomUUID()}`;
    const colors = ['red', 'blue', 'green'];
    await api.ingest(source, {
      entries: Array.from({ length: 12 }, (_, i) => ({
        id: `p${String(i).padStart(2, '0')}`,
        properties: [
          { id: 'name', value: `Item ${i}` },
          { id: 'color', value: colors[i % 3]! },
          { id: 'price', value: 10 * i },
          { id: 'stock', value: i % 4 },
        ],
      })),
    });
    await emulator.idle();
    const destination = `shop-${randomUUID().slice(0, 8)}`;
    const seeded = await fetch(`${emulator.url}/_emulator/destinations`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        customer: 'acme',
        destination,
        sourceId: source,
        endpoints: [{ name: 'products', facets: [{ propertyId: 'color', size: 5, header: { en: 'Colour' } }] }],
      }),
    });
    expect(seeded.status).toBe(201);
    const { queryDestination } = await import('./query-destination.js');
    const answer = await queryDestination({ globalUrl: emulator.url, customer: 'acme', destination, maxPrice: 100 });
    // red/blue (i%3 in 0,1), price < 100 (i <= 9), stock != 0 (i%4 != 0): 1, 3, 6, 7, 9 (0, 4 out).
    expect(answer.total).toBe(5);
    expect(answer.results).toEqual([
      { id: 'p09', name: 'Item 9', color: 'red', price: 90 },
      { id: 'p07', name: 'Item 7', color: 'blue', price: 70 },
      { id: 'p06', name: 'Item 6', color: 'red', price: 60 },
      { id: 'p03', name: 'Item 3', color: 'red', price: 30 },
      { id: 'p01', name: 'Item 1', color: 'blue', price: 10 },
    ]);
    expect(answer.facets).toEqual([
      {
        propertyId: 'color',
        header: 'Colour',
        values: [
          { count: 3, key: 'red' },
          { count: 2, key: 'blue' },
        ],
      },
    ]);
  });
});
