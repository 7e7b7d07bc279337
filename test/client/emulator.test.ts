import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { ErrorCodes } from '../../src/errors.js';
import { createClient, type PlatformClient } from '../../src/client/index.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';

/** The client against the real emulator, in-process over HTTP on port 0. */
const TENANT = 'dev-tenant';

describe('client against the emulator', () => {
  let emulator: RunningEmulator;
  let api: PlatformClient;

  beforeAll(async () => {
    emulator = await startEmulator({ port: 0 });
    api = createClient({ baseUrl: emulator.url, tenant: TENANT, clientId: 'dev-client', clientSecret: 'dev-secret', retry: { baseDelayMs: 10 } });
  });

  afterAll(async () => {
    await api?.close();
    await emulator?.close();
  });

  /** A fresh durable consumer per test (unique namespace), starting at the head of the stream. */
  async function newConsumer(): Promise<string> {
    const id = `consumer-${randomUUID()}`;
    const response = await request(`${emulator.url}/_emulator/tenants/${TENANT}/event-destinations`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id, type: 'DURABLE_CONSUMER' }),
    });
    await response.body.dump();
    expect(response.statusCode).toBe(201);
    return id;
  }

  it('obtains a token from the issuer', async () => {
    await api.ensureCredential();
    const token = await api.token();
    expect(token.length).toBeGreaterThan(10);
  });

  it('refuses a wrong secret with AuthError that does not contain it', async () => {
    const wrong = 'not-the-dev-secret-123';
    const bad = createClient({ baseUrl: emulator.url, tenant: TENANT, clientId: 'dev-client', clientSecret: wrong });
    try {
      const err = await bad.ensureCredential().catch((caught: unknown) => caught);
      expect(err).toMatchObject({ code: ErrorCodes.AUTH });
      expect((err as { status: number }).status).toBeGreaterThanOrEqual(400);
      expect(String(err) + JSON.stringify(err)).not.toContain(wrong);
    } finally {
      await bad.close();
    }
  });

  it('pulls 204 when caught up', async () => {
    await expect(api.pull(await newConsumer(), { workerId: 'w-0' })).resolves.toEqual({ status: 204 });
  });

  it('pulls appended events and acknowledges them: committed', async () => {
    const consumer = await newConsumer();
    const subject = `entry-${randomUUID()}`;
    const appended = emulator.appendEvents(TENANT, [
      { type: 'test.happened', subject, data: { n: 1 } },
      { type: 'test.happened', subject, data: { n: 2 } },
    ]);
    const pulled = await api.pull(consumer, { limit: 10, visibilitySeconds: 30, workerId: 'w-0' });
    expect(pulled.status).toBe(200);
    if (pulled.status !== 200) return;
    expect(pulled.batch.events.map((event) => event.sequence)).toEqual(appended.map((event) => event.sequence));
    expect(typeof pulled.batch.generation).toBe('number');
    const ack = await api.acknowledge(consumer, { leaseId: pulled.batch.leaseId, generation: pulled.batch.generation, status: 'ok' });
    expect(ack).toEqual({ status: 'committed', committed: appended.at(-1)?.sequence });
    await expect(api.pull(consumer, { workerId: 'w-0' })).resolves.toEqual({ status: 204 });
  });

  it('answers 409 while paused and 204 after resume', async () => {
    const consumer = await newConsumer();
    await api.pause(consumer);
    await expect(api.pull(consumer, {})).resolves.toEqual({ status: 409 });
    await api.resume(consumer);
    await expect(api.pull(consumer, {})).resolves.toEqual({ status: 204 });
  });

  it('surfaces 400 for a non-durable destination and 404 for an unknown one', async () => {
    await expect(api.pull('dev-webhook', {})).rejects.toMatchObject({ code: ErrorCodes.API, status: 400 });
    await expect(api.pull(`missing-${randomUUID()}`, {})).rejects.toMatchObject({ code: ErrorCodes.API, status: 404 });
  });

  it('ingests (202) and reads the entry back once the emulator is idle', async () => {
    const sourceId = `source-${randomUUID()}`;
    const accepted = await api.ingest(sourceId, {
      entries: [
        {
          id: 'p1',
          properties: [
            { id: 'Name', value: 'Chair' },
            { id: 'price', value: 12.5 },
          ],
        },
      ],
    });
    expect(accepted).toMatchObject({ sourceId, acceptedEntryCount: 1 });
    expect(accepted.correlationId).toMatch(/^[0-9a-f-]{36}$/);
    await emulator.idle();
    const list = await api.getEntries(sourceId, ['p1', 'nope']);
    expect(list.items.map((entry) => entry.id)).toEqual(['p1']);
    const entry = await api.getEntry(sourceId, 'p1');
    const name = entry.properties.find((property) => property.id === 'name');
    expect(name).toMatchObject({ value: 'Chair', type: 'Text', language: null });
  });

  it('reports server-side validation problems keyed by path', async () => {
    const err = await api
      .ingest(
        `source-${randomUUID()}`,
        {
          entries: [
            { id: 'a', properties: [] },
            { id: 'A', properties: [] },
          ],
        },
        { validate: false },
      )
      .catch((caught: unknown) => caught);
    expect(err).toMatchObject({ code: ErrorCodes.API, status: 400 });
    expect(Object.keys((err as { problem: { errors: object } }).problem.errors).length).toBeGreaterThan(0);
  });
});
