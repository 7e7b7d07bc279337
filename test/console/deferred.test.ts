/**
 * The console's Deferred page's API over real HTTP: the runs waiting in the worker's SQLite store,
 * read through a connection of the console's own, and the answer with the memory store (none kept).
 */
import { join } from 'node:path';
import pino from 'pino';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DevConsole } from '../../src/console/index.js';
import { chainOf, deferredRunsOf } from '../../src/idempotency/deferred.js';
import { createIdempotencyStore } from '../../src/idempotency/index.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { tempDir } from '../worker/harness.js';
import { consoleOptions } from './console-options.js';

const PREFIX = 'dev-tenant:dev-consumer';
let emulator: RunningEmulator;
const consoles: DevConsole[] = [];

beforeAll(async () => {
  emulator = await startEmulator({ port: 0, logger: pino({ level: 'silent' }) });
});
afterAll(async () => {
  for (const c of consoles) await c.close();
  await emulator?.close();
});

async function startConsole(idempotencyUrl: string): Promise<string> {
  const devConsole = new DevConsole({ maxEvents: 10 });
  consoles.push(devConsole);
  const dir = tempDir('console-deferred');
  return devConsole.start(
    consoleOptions(emulator.url, `file:${join(dir, 'dead-letter.jsonl')}`, {
      cwd: dir,
      replay: { handlersDir: join(import.meta.dirname, '../fixtures/console-handlers'), idempotencyUrl },
    }),
  );
}

async function getJson(url: string): Promise<{ status: number; body: any }> {
  const res = await request(url);
  return { status: res.statusCode, body: await res.body.json() };
}

describe("the Deferred page's API", () => {
  it("lists the runs waiting in the worker's store, in chain order, with why and when", async () => {
    const storeUrl = `sqlite:${join(tempDir('console-deferred-store'), 'store.db')}`;
    const store = await createIdempotencyStore(storeUrl, { prefix: PREFIX, doneTtlMs: 600_000 });
    const deferred = deferredRunsOf(store)!;
    const now = Date.now();
    const event = (id: string, sequence: string) => ({
      specversion: '1.0',
      id,
      source: 'test',
      type: 'console.test',
      subject: 'customer-7',
      time: new Date(now).toISOString(),
      sequence,
      data: {},
    });
    await deferred.defer(
      [
        {
          key: 'shop:e-2',
          handler: 'shop',
          chain: chainOf('shop', 'customer-7'),
          sequence: '2',
          event: event('e-2', '2') as never,
          retryAtMs: now,
          deferredAtMs: now - 1_000,
          reason: 'chain',
        },
        {
          key: 'shop:e-1',
          handler: 'shop',
          chain: chainOf('shop', 'customer-7'),
          sequence: '1',
          event: event('e-1', '1') as never,
          retryAtMs: now + 60_000,
          deferredAtMs: now - 5_000,
          reason: 'retry',
        },
      ],
      'owner',
    );
    await store.close();

    const url = await startConsole(storeUrl);
    const page = await getJson(`${url}/api/deferred`);
    expect(page.status).toBe(200);
    expect(page.body.available).toBe(true);
    expect(page.body.runs.map((r: { key: string; reason: string; subject: string }) => [r.key, r.reason, r.subject])).toEqual([
      ['shop:e-1', 'retry', 'customer-7'],
      ['shop:e-2', 'chain', 'customer-7'],
    ]);
    expect(page.body.runs[0].retryAt).toBeGreaterThan(page.body.at);
    const bad = await request(`${url}/api/deferred?limit=0`);
    expect(bad.statusCode).toBe(400);
    expect(String(bad.headers['content-type'])).toContain('application/problem+json');
    await bad.body.dump();
  });

  it('says the memory store keeps none', async () => {
    const url = await startConsole('memory');
    expect((await getJson(`${url}/api/deferred`)).body).toMatchObject({ available: false, runs: [] });
  });
});
