import nock from 'nock';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTestEvent, entryUpdatedData, runHandler, sourceEntry } from 'durable-worker/testing';
import indexEntry from './handlers/index-entry.js';

// The handler's own outbound HTTP, mocked with nock (it intercepts the global fetch): exact request
// shapes and failures a real service would rarely produce on demand. The worker path itself is
// tested against the emulator elsewhere.
const SEARCH_URL = 'http://search.test:9200';

const entryEvent = (id: string, values: Parameters<typeof sourceEntry>[1]) =>
  createTestEvent('source_entry.updated', entryUpdatedData({ sourceId: 'products', current: sourceEntry(id, values) }), { sequence: '9007199254740993' });

describe('examples/search-index: the handler against a mocked search service (nock)', () => {
  beforeAll(() => {
    // Nothing reaches a real network: a request nock does not expect fails the test.
    nock.disableNetConnect();
  });
  beforeEach(() => {
    process.env.SEARCH_URL = SEARCH_URL;
    process.env.SEARCH_API_KEY = 'test-key';
  });
  afterEach(() => {
    nock.cleanAll();
    delete process.env.SEARCH_URL;
    delete process.env.SEARCH_API_KEY;
  });
  afterAll(() => {
    nock.enableNetConnect();
  });

  it('PUTs the entry as a document, with its sequence and the key set up in setup', async () => {
    const service = nock(SEARCH_URL, { reqheaders: { authorization: 'Bearer test-key', 'content-type': 'application/json' } })
      .put('/documents/p%2F1', { sourceId: 'products', sequence: '9007199254740993', fields: { name: 'Kettle', price: 20.5 } })
      .reply(200, { result: 'updated' });
    const outcome = await runHandler(indexEntry, entryEvent('p/1', { name: 'Kettle', price: 20.5 }), { handlerName: 'index-entry' });
    expect(outcome.status).toBe('ok');
    expect(service.isDone()).toBe(true);
  });

  it('5xx and 429 are retried, then dead-lettered on the last attempt; other 4xx are dead-lettered at once', async () => {
    nock(SEARCH_URL).put('/documents/p-1').reply(503, 'overloaded');
    expect(await runHandler(indexEntry, entryEvent('p-1', { name: 'Kettle' }))).toMatchObject({
      status: 'failed',
      error: { message: 'search service answered 503 for p-1: overloaded' },
    });
    nock(SEARCH_URL).put('/documents/p-1').reply(429);
    expect(await runHandler(indexEntry, entryEvent('p-1', { name: 'Kettle' }), { attempt: 5, maxAttempts: 5 })).toMatchObject({
      status: 'dead_lettered',
      reason: 'max-attempts',
    });
    nock(SEARCH_URL).put('/documents/p-1').reply(422, { error: 'field price: not a number' });
    expect(await runHandler(indexEntry, entryEvent('p-1', { price: 'n/a' }))).toMatchObject({
      status: 'dead_lettered',
      reason: 'permanent',
      error: { code: 'DW_ERR_PERMANENT', message: expect.stringContaining('refused p-1 (422)') },
    });
  });

  it('a connection reset is retried', async () => {
    nock(SEARCH_URL).put('/documents/p-1').replyWithError({ code: 'ECONNRESET', message: 'socket hang up' });
    const outcome = await runHandler(indexEntry, entryEvent('p-1', { name: 'Kettle' }));
    expect(outcome.status).toBe('failed');
  });

  it('a service that does not answer is cut at the lease deadline (the request carries ctx.signal)', async () => {
    const service = nock(SEARCH_URL).put('/documents/p-1').delay(60_000).reply(200);
    const outcome = await runHandler(indexEntry, entryEvent('p-1', { name: 'Kettle' }), { leaseMs: 100 });
    expect(outcome).toMatchObject({ status: 'failed', error: { code: 'DW_ERR_HANDLER_TIMEOUT' } });
    expect(service.isDone()).toBe(true);
  });

  it('without SEARCH_URL its setup fails, naming the handler (the worker would stay unready)', async () => {
    delete process.env.SEARCH_URL;
    await expect(runHandler(indexEntry, entryEvent('p-1', { name: 'Kettle' }), { handlerName: 'index-entry' })).rejects.toThrow(
      'setup of handler index-entry failed: SEARCH_URL is not set',
    );
  });

  it('resources can be handed in: setup does not run', async () => {
    delete process.env.SEARCH_URL;
    nock('http://other.test').put('/v2/documents/p-1').reply(204);
    const outcome = await runHandler(indexEntry, entryEvent('p-1', { name: 'Kettle' }), {
      resources: { documents: new URL('http://other.test/v2/documents/'), apiKey: undefined },
    });
    expect(outcome.status).toBe('ok');
  });
});
