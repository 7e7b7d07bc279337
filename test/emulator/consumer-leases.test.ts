import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { waitFor } from '../fixtures/wait-for.js';
import { call, sequences, startTestEmulator, type TestEmulator } from './helpers.js';

/** Spec: "Lease of a durable consumer", "Pull a batch", "Acknowledge a batch", "Events", "Limits". */
describe('durable consumer leases over HTTP', () => {
  let t: TestEmulator;
  beforeEach(async () => {
    t = await startTestEmulator();
  });
  afterEach(async () => {
    await t.close();
  });

  it('hands out a batch in stream order with lease fields and CloudEvents 1.0 events', async () => {
    t.append(5);
    const res = await t.pull({ limit: 3, workerId: 'w1' });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toContain('application/json');
    expect(res.body.generation).toBe(1);
    expect(res.body.attempt).toBe(1);
    expect(typeof res.body.leaseId).toBe('string');
    expect(res.body.events.map((e) => e.sequence)).toEqual(['1', '2', '3']);
    for (const event of res.body.events) {
      expect(event).toMatchObject({ specversion: '1.0', type: 'test.event', datacontenttype: 'application/json', source: '/tenants/dev-tenant' });
      expect(event.id).toMatch(/^[0-9a-f-]{36}$/);
    }
  });

  it('uses limit 20 by default', async () => {
    t.append(25);
    const res = await t.pull({ workerId: 'w1' });
    expect(sequences(res.body)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
  });

  it('starts a new consumer at the head of the stream and never hands out earlier events', async () => {
    t.append(3);
    const created = await call('POST', `${t.em.url}/_emulator/tenants/dev-tenant/event-destinations`, {
      json: { id: 'late-consumer', type: 'DURABLE_CONSUMER' },
    });
    expect(created.status).toBe(201);
    expect((await t.pull({ workerId: 'w1' }, 'late-consumer')).status).toBe(204);
    t.append(2);
    const res = await t.pull({ workerId: 'w1', limit: 100 }, 'late-consumer');
    expect(sequences(res.body)).toEqual([4, 5]);
  });

  it('returns the same lease when the same worker pulls again before acknowledging', async () => {
    t.append(10);
    const first = await t.pull({ limit: 4, workerId: 'w1' });
    const again = await t.pull({ limit: 4, workerId: 'w1' });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    const other = await t.pull({ limit: 4, workerId: 'w2' });
    expect(other.body.leaseId).not.toBe(first.body.leaseId);
    expect(sequences(other.body)).toEqual([5, 6, 7, 8]);
  });

  it('GET /_emulator/state lists the leases held: by which workerId, which sequences, until when', async () => {
    t.append(6);
    const before = Date.now();
    const first = await t.pull({ limit: 2, workerId: 'w1', visibility: 30 });
    const anonymous = await t.pull({ limit: 3 });
    const state = await call('GET', `${t.em.url}/_emulator/state`);
    const leases = state.body.tenants[0].consumers[0].leases as Array<Record<string, unknown>>;
    expect(leases).toEqual([
      { leaseId: first.body.leaseId, workerId: 'w1', generation: 1, attempt: 1, firstSequence: '1', lastSequence: '2', expiresAt: expect.any(String) },
      { leaseId: anonymous.body.leaseId, workerId: null, generation: 1, attempt: 1, firstSequence: '3', lastSequence: '5', expiresAt: expect.any(String) },
    ]);
    const expiresAtMs = Date.parse(leases[0]!.expiresAt as string);
    expect(expiresAtMs).toBeGreaterThanOrEqual(before + 30_000);
    expect(expiresAtMs).toBeLessThanOrEqual(Date.now() + 30_000);
    // Acknowledged or requeued: no longer held.
    await t.ack({ leaseId: first.body.leaseId, generation: 1, status: 'ok' });
    await t.ack({ leaseId: anonymous.body.leaseId, generation: 1, status: 'failed' });
    expect(t.em.state().tenants[0]!.consumers[0]!.leases).toEqual([]);
  });

  it('treats pulls without workerId as one shared identity', async () => {
    t.append(10);
    const first = await t.pull({ limit: 2 });
    const second = await t.pull({ limit: 2 });
    expect(second.body.leaseId).toBe(first.body.leaseId);
    expect(sequences(second.body)).toEqual([1, 2]);
  });

  it('redelivers a failed batch before new work with a higher generation and attempt', async () => {
    t.append(10);
    const first = await t.pull({ limit: 3, workerId: 'w1' });
    const ack = await t.ack({ leaseId: first.body.leaseId, generation: 1, status: 'failed' });
    expect(ack.body).toEqual({ status: 'requeued', committed: null });
    const redelivered = await t.pull({ limit: 3, workerId: 'w2' });
    expect(sequences(redelivered.body)).toEqual([1, 2, 3]);
    expect(redelivered.body.generation).toBe(2);
    expect(redelivered.body.attempt).toBe(2);
    expect(redelivered.body.events.map((e) => e.id)).toEqual(first.body.events.map((e) => e.id));
    expect(sequences((await t.pull({ limit: 3, workerId: 'w3' })).body)).toEqual([4, 5, 6]);
  });

  it('redelivers an expired lease before new work with a higher generation, and an ack of the old generation is stale', async () => {
    t.append(3);
    const first = await t.pull({ limit: 3, workerId: 'w1', visibility: 1 });
    t.append(3);
    // The lease is evaluated lazily: wait (with a deadline) until the state shows it expired.
    await waitFor('the lease to expire', () => t.em.state().tenants[0]!.consumers[0]!.pendingRedelivery === 3, 5_000, 50);
    const redelivered = await t.pull({ limit: 3, workerId: 'w2' });
    expect(redelivered.body.leaseId).toBe(first.body.leaseId);
    expect(sequences(redelivered.body)).toEqual([1, 2, 3]);
    expect(redelivered.body.generation).toBe(2);
    expect(redelivered.body.attempt).toBe(2);

    const stale = await t.ack({ leaseId: first.body.leaseId, generation: 1, status: 'ok' });
    expect(stale.body).toEqual({ status: 'stale', committed: null });
    const current = await t.ack({ leaseId: first.body.leaseId, generation: 2, status: 'ok' });
    expect(current.body).toEqual({ status: 'committed', committed: '3' });
  });

  it('honours an ack of an expired lease not yet handed to another worker', async () => {
    t.append(4);
    const first = await t.pull({ limit: 2, workerId: 'w1', visibility: 1 });
    await waitFor('the lease to expire', () => t.em.state().tenants[0]!.consumers[0]!.pendingRedelivery === 2, 5_000, 50);
    const ack = await t.ack({ leaseId: first.body.leaseId, generation: 1, status: 'ok' });
    expect(ack.body).toEqual({ status: 'committed', committed: '2' });
    expect(sequences((await t.pull({ limit: 5, workerId: 'w2' })).body)).toEqual([3, 4]);
  });

  it('advances the committed cursor only over a contiguous run of acknowledged batches', async () => {
    t.append(6);
    const a = await t.pull({ limit: 2, workerId: 'a' });
    const b = await t.pull({ limit: 2, workerId: 'b' });
    const c = await t.pull({ limit: 2, workerId: 'c' });
    expect((await t.ack({ leaseId: c.body.leaseId, generation: 1, status: 'ok' })).body).toEqual({ status: 'committed', committed: null });
    expect((await t.ack({ leaseId: b.body.leaseId, generation: 1, status: 'ok' })).body).toEqual({ status: 'committed', committed: null });
    expect((await t.ack({ leaseId: a.body.leaseId, generation: 1, status: 'ok' })).body).toEqual({ status: 'committed', committed: '6' });
  });

  it('answers a retried identical ok ack with committed again', async () => {
    t.append(2);
    const lease = await t.pull({ limit: 2, workerId: 'w1' });
    const body = { leaseId: lease.body.leaseId, generation: 1, status: 'ok' };
    expect((await t.ack(body)).body).toEqual({ status: 'committed', committed: '2' });
    expect((await t.ack(body)).body).toEqual({ status: 'committed', committed: '2' });
    expect((await t.ack({ ...body, status: 'failed' })).body.status).toBe('stale');
  });

  it('answers 429 with Retry-After once 1,000 events are leased and unacknowledged', async () => {
    t.append(1_100);
    const leases = [];
    for (let i = 0; i < 10; i++) {
      const res = await t.pull({ limit: 100, workerId: `w${i}`, visibility: 600 });
      expect(res.status).toBe(200);
      leases.push(res.body);
    }
    const full = await t.pull({ limit: 100, workerId: 'w-extra' });
    expect(full.status).toBe(429);
    expect(full.headers['content-type']).toBe('application/problem+json');
    expect(Number(full.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(Number.isInteger(Number(full.headers['retry-after']))).toBe(true);
    await t.ack({ leaseId: leases[0]!.leaseId, generation: 1, status: 'ok' });
    const after = await t.pull({ limit: 100, workerId: 'w-extra' });
    expect(sequences(after.body)[0]).toBe(1_001);
  });

  it('never leases past the 1,000-event window', async () => {
    t.append(1_050);
    for (let i = 0; i < 9; i++) await t.pull({ limit: 100, workerId: `w${i}` });
    await t.pull({ limit: 50, workerId: 'half' });
    const last = await t.pull({ limit: 100, workerId: 'w-last' });
    expect(last.body.events).toHaveLength(50);
    expect(t.em.state().tenants[0]!.consumers[0]!.leased).toBe(1_000);
  });

  it('answers 409 while paused and still accepts acknowledgements', async () => {
    t.append(4);
    const lease = await t.pull({ limit: 2, workerId: 'w1' });
    const paused = await call('POST', `${t.em.url}/v1/event-destinations/dev-consumer/pause`, { headers: t.auth });
    expect(paused.body).toEqual({ id: 'dev-consumer', type: 'DURABLE_CONSUMER', paused: true });
    const refused = await t.pull({ workerId: 'w2' });
    expect(refused.status).toBe(409);
    expect(refused.headers['content-type']).toBe('application/problem+json');
    expect((await t.ack({ leaseId: lease.body.leaseId, generation: 1, status: 'ok' })).body).toEqual({ status: 'committed', committed: '2' });
    await call('POST', `${t.em.url}/v1/event-destinations/dev-consumer/resume`, { headers: t.auth });
    expect(sequences((await t.pull({ workerId: 'w2' })).body)).toEqual([3, 4]);
  });

  it('answers 204 without a body when caught up', async () => {
    const empty = await t.pull({ workerId: 'w1' });
    expect(empty.status).toBe(204);
    expect(empty.text).toBe('');
    t.append(1);
    const lease = await t.pull({ workerId: 'w1' });
    await t.ack({ leaseId: lease.body.leaseId, generation: 1, status: 'ok' });
    expect((await t.pull({ workerId: 'w1' })).status).toBe(204);
  });

  it('answers 400 for a destination that is not a durable consumer', async () => {
    const res = await t.pull({ workerId: 'w1' }, 'dev-webhook');
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ status: 400, instance: '/v1/event-destinations/dev-webhook/pull' });
  });

  it('answers 404 for an unknown destination (pull, acknowledge, pause)', async () => {
    expect((await t.pull({}, 'no-such-destination')).status).toBe(404);
    expect((await t.ack({ leaseId: 'x', generation: 1, status: 'ok' }, 'no-such-destination')).status).toBe(404);
    expect((await call('POST', `${t.em.url}/v1/event-destinations/no-such-destination/pause`, { headers: t.auth })).status).toBe(404);
  });

  it('answers 404 for a lease id the consumer never issued', async () => {
    const res = await t.ack({ leaseId: 'not-a-lease', generation: 1, status: 'ok' });
    expect(res.status).toBe(404);
    expect(res.headers['content-type']).toBe('application/problem+json');
  });

  it.each([
    [{ limit: 0 }, 'limit'],
    [{ limit: 101 }, 'limit'],
    [{ limit: 'ten' }, 'limit'],
    [{ limit: '2.5' }, 'limit'],
    [{ visibility: 0 }, 'visibility'],
    [{ visibility: 601 }, 'visibility'],
    [{ visibility: 'x' }, 'visibility'],
    [{ workerId: 'w'.repeat(201) }, 'workerId'],
  ] as const)('answers 400 keyed by the parameter for %o', async (query, key) => {
    const res = await t.pull(query);
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toBe('application/problem+json');
    expect(Object.keys(res.body.errors!)).toEqual([key]);
    expect(res.body.errors![key]![0]).toMatch(new RegExp(key));
  });

  it('accepts the boundary values and reports every bad parameter at once', async () => {
    t.append(1);
    expect((await t.pull({ limit: 100, visibility: 600, workerId: 'w'.repeat(200) })).status).toBe(200);
    const res = await t.pull({ limit: -1, visibility: 1000, workerId: 'w'.repeat(300) });
    expect(Object.keys(res.body.errors!).sort()).toEqual(['limit', 'visibility', 'workerId']);
  });

  it('validates the acknowledge body with errors keyed by field', async () => {
    const res = await t.ack({ leaseId: 5, generation: '1', status: 'done' });
    expect(res.status).toBe(400);
    expect(Object.keys(res.body.errors!).sort()).toEqual(['generation', 'leaseId', 'status']);
    const missing = await t.ack({});
    expect(Object.keys(missing.body.errors!).sort()).toEqual(['generation', 'leaseId', 'status']);
  });

  it('splits a redelivered batch to the smaller limit of the next pull', async () => {
    t.append(12);
    const first = await t.pull({ limit: 10, workerId: 'w1' });
    await t.ack({ leaseId: first.body.leaseId, generation: 1, status: 'failed' });
    const head = await t.pull({ limit: 4, workerId: 'w2' });
    expect(sequences(head.body)).toEqual([1, 2, 3, 4]);
    expect(head.body.generation).toBe(2);
    const tail = await t.pull({ limit: 100, workerId: 'w3' });
    expect(sequences(tail.body)).toEqual([5, 6, 7, 8, 9, 10]);
    expect((await t.ack({ leaseId: first.body.leaseId, generation: 1, status: 'ok' })).body.status).toBe('stale');
    await t.ack({ leaseId: tail.body.leaseId, generation: tail.body.generation, status: 'ok' });
    const done = await t.ack({ leaseId: head.body.leaseId, generation: 2, status: 'ok' });
    expect(done.body).toEqual({ status: 'committed', committed: '10' });
  });

  it('requires scope read:events and a valid credential', async () => {
    const noCredential = await call('POST', `${t.em.url}/v1/event-destinations/dev-consumer/pull`);
    expect(noCredential.status).toBe(401);
    expect(noCredential.headers['www-authenticate']).toMatch(/^Bearer/);
    const writeOnly = await call<{ access_token: string }>('POST', `${t.em.url}/oauth2/token`, {
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=client_credentials&client_id=dev-client&client_secret=dev-secret&audience=dev-tenant&scope=write:sources%20read:events:pull',
    });
    const res = await call('POST', `${t.em.url}/v1/event-destinations/dev-consumer/pull`, {
      headers: { authorization: `Bearer ${writeOnly.body.access_token}` },
    });
    expect(res.status).toBe(403);
    const ack = await call('POST', `${t.em.url}/v1/event-destinations/dev-consumer/acknowledge`, {
      headers: { authorization: `Bearer ${writeOnly.body.access_token}` },
      json: { leaseId: 'x', generation: 1, status: 'ok' },
    });
    expect(ack.status).toBe(403);
  });
});
