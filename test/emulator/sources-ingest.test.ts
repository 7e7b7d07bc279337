import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SourceEntryUpdatedData } from '../../src/types.js';
import { call } from './helpers.js';
import { entry, startSourcesTestbed, valuesOf, type SourcesTestbed } from './sources-helpers.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('typed ingest over HTTP (POST /sources/{sourceId})', () => {
  let t: SourcesTestbed;
  beforeAll(async () => {
    t = await startSourcesTestbed();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('answers 202 with correlationId, sourceId, acceptedAt, acceptedEntryCount and newPropertiesFound', async () => {
    const sourceId = t.newSourceId();
    const before = Date.now();
    const answer = await t.ingest(sourceId, {
      entries: [
        entry('a', [
          { id: 'Price', value: 3 },
          { id: 'tags', value: ['x', 'y'] },
        ]),
        entry('b', [
          { id: 'price', value: 3.5 },
          { id: 'title', value: 'Hello', language: 'en' },
        ]),
      ],
    });
    expect(answer.status).toBe(202);
    expect(answer.body.correlationId).toMatch(UUID);
    expect(answer.body.sourceId).toBe(sourceId);
    expect(Date.parse(answer.body.acceptedAt)).toBeGreaterThanOrEqual(before - 1000);
    expect(answer.body.acceptedEntryCount).toBe(2);
    expect(answer.body.newPropertiesFound).toEqual([
      { id: 'price', type: 'Decimal' },
      { id: 'tags', type: 'List', delimiter: ',' },
      { id: 'title', type: 'LocalizedText' },
    ]);
  });

  it('each accepted batch has its own correlationId', async () => {
    const sourceId = t.newSourceId();
    const body = { entries: [entry('a', [{ id: 'n', value: 1 }])] };
    const [first, second] = await Promise.all([t.ingest(sourceId, body), t.ingest(sourceId, body)]);
    expect(first.body.correlationId).not.toBe(second.body.correlationId);
  });

  it('ingest is asynchronous: the 202 comes before the entry is readable, idle() applies it', async () => {
    const sourceId = t.newSourceId();
    const answer = await t.ingest(sourceId, { entries: [entry('late', [{ id: 'n', value: 1 }])] });
    expect(answer.status).toBe(202);
    await t.em.idle();
    const read = await t.readOne(sourceId, 'late');
    expect(read.status).toBe(200);
    expect(valuesOf(read.body)).toEqual({ n: 1 });
  });

  it('a validation failure answers 400 problem+json with errors keyed by request path', async () => {
    const sourceId = t.newSourceId();
    const answer = await t.ingest(sourceId, { entries: [entry('Sku', []), entry('sku', [])] });
    expect(answer.status).toBe(400);
    expect(answer.headers['content-type']).toBe('application/problem+json');
    expect(answer.body).toMatchObject({ status: 400, instance: `/sources/${sourceId}` });
    expect(Object.keys(answer.body.errors)).toEqual(['entries[1].id']);
  });

  it('all-or-nothing: one bad entry rejects the batch and nothing becomes readable', async () => {
    const sourceId = t.newSourceId();
    await t.ingestApplied(sourceId, { entries: [entry('seed', [{ id: 'n', value: 1 }])] });
    const answer = await t.ingest(sourceId, {
      entries: [entry('good-1', [{ id: 'n', value: 2 }]), entry('bad', [{ id: 'n', value: 'two' }]), entry('good-2', [{ id: 'n', value: 3 }])],
    });
    expect(answer.status).toBe(400);
    expect(Object.keys(answer.body.errors)).toEqual(['entries[1].properties[0].value']);
    await t.em.idle();
    const read = await t.readMany(sourceId, ['good-1', 'bad', 'good-2', 'seed']);
    expect(read.body.items.map((e: { id: string }) => e.id)).toEqual(['seed']);
  });

  it('a rejected ingest to an unknown source does not create it', async () => {
    const sourceId = t.newSourceId();
    expect((await t.ingest(sourceId, { entries: [] })).status).toBe(400);
    expect((await t.readMany(sourceId, ['x'])).status).toBe(404);
  });

  it('validates against the configured type: a string for an Integer property is 400', async () => {
    const sourceId = t.newSourceId();
    await t.ingestApplied(sourceId, { entries: [entry('a', [{ id: 'count', value: 1 }])] });
    const answer = await t.ingest(sourceId, { entries: [entry('b', [{ id: 'COUNT', value: '2' }])] });
    expect(answer.status).toBe(400);
    expect(answer.body.errors['entries[0].properties[0].value'][0]).toMatch(/Integer/);
  });

  it('a later batch validates against the type inferred by an earlier one', async () => {
    const sourceId = t.newSourceId();
    const [first, second] = [
      await t.ingest(sourceId, { entries: [entry('a', [{ id: 'flag', value: true }])] }),
      await t.ingest(sourceId, { entries: [entry('b', [{ id: 'flag', value: 'yes' }])] }),
    ];
    expect(first.status).toBe(202);
    expect(second.status).toBe(400);
  });

  it('language on a Text property is 400 at the language path', async () => {
    const sourceId = t.newSourceId();
    await t.ingestApplied(sourceId, { entries: [entry('a', [{ id: 'title', value: 'x' }])] });
    const answer = await t.ingest(sourceId, { entries: [entry('a', [{ id: 'title', value: 'y', language: 'en' }])] });
    expect(answer.status).toBe(400);
    expect(Object.keys(answer.body.errors)).toEqual(['entries[0].properties[0].language']);
  });

  it('a list element containing the configured delimiter is 400', async () => {
    const sourceId = t.newSourceId();
    await t.ingestApplied(sourceId, { entries: [entry('a', [{ id: 'tags', value: ['x'] }])] });
    expect((await t.putProperty(sourceId, 'tags', { delimiter: '|' })).status).toBe(200);
    expect((await t.ingest(sourceId, { entries: [entry('a', [{ id: 'tags', value: ['a|b'] }])] })).status).toBe(400);
    expect((await t.ingest(sourceId, { entries: [entry('a', [{ id: 'tags', value: ['a,b'] }])] })).status).toBe(202);
  });

  it('a reserved property id is 400', async () => {
    const answer = await t.ingest(t.newSourceId(), { entries: [entry('a', [{ id: 'lastUpdated', value: 'x' }])] });
    expect(answer.status).toBe(400);
    expect(answer.body.errors['entries[0].properties[0].id'][0]).toMatch(/reserved/);
  });

  it('the 64-bit integer bounds are exact over HTTP: max accepted, max + 1 rejected', async () => {
    const sourceId = t.newSourceId();
    const max = await t.ingestRaw(sourceId, '{"entries":[{"id":"big","properties":[{"id":"n","value":9223372036854775807}]}]}');
    expect(max.status).toBe(202);
    expect(max.body.newPropertiesFound).toEqual([{ id: 'n', type: 'Integer' }]);
    const over = await t.ingestRaw(sourceId, '{"entries":[{"id":"big","properties":[{"id":"n","value":9223372036854775808}]}]}');
    expect(over.status).toBe(400);
    expect(over.body.errors['entries[0].properties[0].value'][0]).toMatch(/64-bit/);
  });

  it('a body above the request ceiling is 400 naming the ceiling', async () => {
    const small = await startSourcesTestbed({ maxBodyBytes: 2048 });
    try {
      const answer = await small.ingest(small.newSourceId(), { entries: [entry('a', [{ id: 'p', value: 'x'.repeat(4096) }])] });
      expect(answer.status).toBe(400);
      expect(answer.body.errors.$[0]).toMatch(/ceiling of 2048 bytes/);
    } finally {
      await small.close();
    }
  });

  it('malformed JSON is 400 and a non-JSON media type is 415', async () => {
    const sourceId = t.newSourceId();
    expect((await t.ingestRaw(sourceId, '{"entries": [')).status).toBe(400);
    const form = await call('POST', `${t.url}/sources/${sourceId}`, { headers: { ...t.auth, 'content-type': 'text/plain' }, body: 'x' });
    expect(form.status).toBe(415);
  });

  it('emits one source_entry.updated per entry with previous and current values', async () => {
    const sourceId = t.newSourceId();
    const consumer = await t.newConsumer();
    await t.ingestApplied(sourceId, { entries: [entry('e1', [{ id: 'n', value: 1 }]), entry('e2', [{ id: 'n', value: 5 }])] });
    await t.ingestApplied(sourceId, {
      entries: [
        entry('E1', [
          { id: 'n', value: 2 },
          { id: 'label', value: 'two' },
        ]),
      ],
    });
    const events = (await t.drain(consumer)).filter((e) => (e.data as SourceEntryUpdatedData).sourceId === sourceId);
    expect(events.map((e) => [e.type, e.subject])).toEqual([
      ['source_entry.updated', 'e1'],
      ['source_entry.updated', 'e2'],
      ['source_entry.updated', 'e1'],
    ]);
    const first = events[0]!.data as SourceEntryUpdatedData;
    const third = events[2]!.data as SourceEntryUpdatedData;
    expect(first.previous).toBeNull();
    expect(first.entryId).toBe('e1');
    expect(valuesOf(first.current)).toEqual({ n: 1 });
    expect(third.previous).toEqual(first.current);
    expect(valuesOf(third.current)).toEqual({ n: 2, label: 'two' });
    expect(Number(events[2]!.sequence)).toBeGreaterThan(Number(events[1]!.sequence));
  });

  it('the default durable consumer dev-consumer receives the ingest events', async () => {
    const fresh = await startSourcesTestbed();
    try {
      const sourceId = fresh.newSourceId();
      await fresh.ingestApplied(sourceId, { entries: [entry('only', [{ id: 'ok', value: true }])] });
      const events = await fresh.drain('dev-consumer');
      expect(events).toHaveLength(1);
      expect(events[0]).toMatchObject({
        specversion: '1.0',
        type: 'source_entry.updated',
        subject: 'only',
        data: { sourceId, entryId: 'only', previous: null },
      });
    } finally {
      await fresh.close();
    }
  });
});

describe('typed ingest permissions (spec, Authentication 4-6 and rule 11)', () => {
  let t: SourcesTestbed;
  beforeAll(async () => {
    t = await startSourcesTestbed();
  });
  afterAll(async () => {
    await t?.close();
  });
  const body = { entries: [entry('a', [{ id: 'n', value: 1 }])] };

  it('without a credential: 401', async () => {
    expect((await t.ingest(t.newSourceId(), body, {})).status).toBe(401);
  });

  it('a token holding only import-datasource: 403', async () => {
    const headers = await t.bearer({ scope: 'import-datasource' });
    const answer = await t.ingest(t.newSourceId(), body, headers);
    expect(answer.status).toBe(403);
    expect(answer.headers['content-type']).toBe('application/problem+json');
  });

  it('a token holding write:sources only: 202', async () => {
    expect((await t.ingest(t.newSourceId(), body, await t.bearer({ scope: 'write:sources' }))).status).toBe(202);
  });

  it('a data-provider token cannot use typed ingest even with write:sources: 403', async () => {
    const headers = await t.application({ scopes: ['write:sources', 'import-datasource'], dataProvider: true });
    expect((await t.ingest(t.newSourceId(), body, headers)).status).toBe(403);
  });

  it('an application granted selected sources may ingest into those only', async () => {
    const granted = t.newSourceId();
    const headers = await t.application({ scopes: ['write:sources'], sources: [granted] });
    expect((await t.ingest(granted, body, headers)).status).toBe(202);
    expect((await t.ingest(t.newSourceId(), body, headers)).status).toBe(403);
  });

  it('with autoCreateSources off, ingest to an unknown source is 404', async () => {
    const strict = await startSourcesTestbed({ config: { autoCreateSources: false } });
    try {
      const answer = await strict.ingest(strict.newSourceId(), body);
      expect(answer.status).toBe(404);
      expect(answer.headers['content-type']).toBe('application/problem+json');
    } finally {
      await strict.close();
    }
  });
});
