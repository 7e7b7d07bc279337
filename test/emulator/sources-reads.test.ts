import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from './helpers.js';
import { entry, startSourcesTestbed, valuesOf, type SourcesTestbed } from './sources-helpers.js';

describe('source entry reads (GET /v1/sources/{sourceId}/entries)', () => {
  let t: SourcesTestbed;
  beforeAll(async () => {
    t = await startSourcesTestbed();
  });
  afterAll(async () => {
    await t?.close();
  });

  async function seeded(ids: string[]): Promise<string> {
    const sourceId = t.newSourceId();
    await t.ingestApplied(sourceId, { entries: ids.map((id, index) => entry(id, [{ id: 'n', value: index }])) });
    return sourceId;
  }

  it('results follow the requested order', async () => {
    const sourceId = await seeded(['a', 'b', 'c']);
    const read = await t.readMany(sourceId, ['c', 'a', 'b']);
    expect(read.status).toBe(200);
    expect(read.body.items.map((e: { id: string }) => e.id)).toEqual(['c', 'a', 'b']);
  });

  it('duplicate ids are collapsed, also when they differ only in case', async () => {
    const sourceId = await seeded(['a', 'b']);
    const read = await t.readMany(sourceId, ['b', 'a', 'b', 'A']);
    expect(read.body.items.map((e: { id: string }) => e.id)).toEqual(['b', 'a']);
  });

  it('missing entries are omitted', async () => {
    const sourceId = await seeded(['a']);
    const read = await t.readMany(sourceId, ['nope', 'a', 'gone']);
    expect(read.body).toEqual({ items: [expect.objectContaining({ id: 'a' })] });
  });

  it('an absent id filter is 400 with errors.id (the source cannot be listed in full)', async () => {
    const sourceId = await seeded(['a']);
    const read = await t.readMany(sourceId, []);
    expect(read.status).toBe(400);
    expect(read.headers['content-type']).toBe('application/problem+json');
    expect(Object.keys(read.body.errors)).toEqual(['id']);
  });

  it('100 distinct ids are allowed, 101 are 400', async () => {
    const sourceId = await seeded(['a']);
    const hundred = Array.from({ length: 100 }, (_, i) => `id-${i}`);
    expect((await t.readMany(sourceId, hundred)).status).toBe(200);
    const tooMany = await t.readMany(sourceId, [...hundred, 'one-more']);
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.errors.id[0]).toMatch(/100/);
    // Duplicates collapse: 100 distinct ids asked twice each are still 100.
    expect((await t.readMany(sourceId, [...hundred, ...hundred])).status).toBe(200);
  });

  it('an unknown source is 404 for both reads', async () => {
    const sourceId = t.newSourceId();
    expect((await t.readMany(sourceId, ['a'])).status).toBe(404);
    expect((await t.readOne(sourceId, 'a')).status).toBe(404);
  });

  it('a single read answers the entry, and 404 for a missing entry', async () => {
    const sourceId = await seeded(['Mixed-Case']);
    const found = await t.readOne(sourceId, 'mixed-case');
    expect(found.status).toBe(200);
    expect(found.body.id).toBe('Mixed-Case');
    const missing = await t.readOne(sourceId, 'absent');
    expect(missing.status).toBe(404);
    expect(missing.headers['content-type']).toBe('application/problem+json');
  });

  it('every property item has id, value, type, delimiter, lastUpdated and language', async () => {
    const sourceId = t.newSourceId();
    await t.ingestApplied(sourceId, {
      entries: [
        entry('e', [
          { id: 'Title', value: 'Hi', language: 'en' },
          { id: 'tags', value: ['a', 'b'] },
        ]),
      ],
    });
    const read = await t.readOne(sourceId, 'e');
    expect(Object.keys(read.body).sort()).toEqual(['id', 'lastUpdated', 'properties']);
    for (const item of read.body.properties) {
      expect(Object.keys(item).sort()).toEqual(['delimiter', 'id', 'language', 'lastUpdated', 'type', 'value']);
    }
    expect(read.body.properties).toEqual([
      { id: 'title', value: 'Hi', type: 'LocalizedText', delimiter: null, lastUpdated: expect.any(String), language: 'en' },
      { id: 'tags', value: ['a', 'b'], type: 'List', delimiter: ',', lastUpdated: expect.any(String), language: null },
    ]);
  });

  it('values keep their JSON types: Text, List, Boolean, Integer, Decimal and Timestamp', async () => {
    const sourceId = t.newSourceId();
    await t.ingestApplied(sourceId, { entries: [entry('e', [{ id: 'seed', value: 'x' }])] });
    expect((await t.putProperty(sourceId, 'when', { displayName: 'When', type: 'Timestamp' })).status).toBe(200);
    await t.ingestApplied(sourceId, {
      entries: [
        entry('e', [
          { id: 'text', value: 'words' },
          { id: 'list', value: ['x', 'y'] },
          { id: 'flag', value: false },
          { id: 'count', value: -7 },
          { id: 'ratio', value: 0.25 },
          { id: 'when', value: '2024-05-01T10:20:30Z' },
        ]),
      ],
    });
    const read = await t.readOne(sourceId, 'e');
    expect(valuesOf(read.body)).toEqual({ seed: 'x', text: 'words', list: ['x', 'y'], flag: false, count: -7, ratio: 0.25, when: '2024-05-01T10:20:30Z' });
    expect(Object.fromEntries(read.body.properties.map((p: { id: string; type: string }) => [p.id, p.type]))).toEqual({
      seed: 'Text',
      text: 'Text',
      list: 'List',
      flag: 'Boolean',
      count: 'Integer',
      ratio: 'Decimal',
      when: 'Timestamp',
    });
  });

  it('Integers beyond 2^53 read back exactly: both reads and the source_entry.updated event carry the digits written', async () => {
    const consumer = await t.newConsumer();
    const sourceId = t.newSourceId();
    const literals = { max: '9223372036854775807', min: '-9223372036854775808', above: '9007199254740993', small: '12' };
    const properties = Object.entries(literals).map(([id, literal]) => `{"id":"${id}","value":${literal}}`);
    expect((await t.ingestRaw(sourceId, `{"entries":[{"id":"big","properties":[${properties.join(',')}]}]}`)).status).toBe(202);
    await t.em.idle();
    // Parsed with JSON.parse these would round; the text must hold the exact literals.
    const one = await t.readOne(sourceId, 'big');
    const many = await t.readMany(sourceId, ['big']);
    const pulled = await call('POST', `${t.url}/v1/event-destinations/${consumer}/pull?limit=100`, { headers: t.auth });
    expect([one.status, many.status, pulled.status]).toEqual([200, 200, 200]);
    for (const [id, literal] of Object.entries(literals)) {
      const item = `{"id":"${id}","value":${literal},"type":"Integer"`;
      expect(one.text, id).toContain(item);
      expect(many.text, id).toContain(item);
      expect(pulled.text, id).toContain(item);
    }
  });

  it('null clears: a scalar reads as null, a list as []', async () => {
    const sourceId = t.newSourceId();
    await t.ingestApplied(sourceId, {
      entries: [
        entry('e', [
          { id: 'n', value: 4 },
          { id: 'tags', value: ['a'] },
          { id: 'keep', value: 'k' },
        ]),
      ],
    });
    await t.ingestApplied(sourceId, {
      entries: [
        entry('e', [
          { id: 'n', value: null },
          { id: 'tags', value: null },
        ]),
      ],
    });
    const read = await t.readOne(sourceId, 'e');
    expect(valuesOf(read.body)).toEqual({ n: null, tags: [], keep: 'k' });
  });

  it('ingest is an upsert: properties not sent keep their values', async () => {
    const sourceId = t.newSourceId();
    await t.ingestApplied(sourceId, {
      entries: [
        entry('e', [
          { id: 'a', value: 'one' },
          { id: 'b', value: 'two' },
        ]),
      ],
    });
    await t.ingestApplied(sourceId, { entries: [entry('e', [{ id: 'b', value: 'three' }])] });
    expect(valuesOf((await t.readOne(sourceId, 'e')).body)).toEqual({ a: 'one', b: 'three' });
  });

  it('localized properties read one item per language, sharing the property timestamp', async () => {
    const sourceId = t.newSourceId();
    await t.ingestApplied(sourceId, {
      entries: [
        entry('e', [
          { id: 'name', value: 'Hello', language: 'en' },
          { id: 'name', value: 'Hallo', language: 'de' },
        ]),
      ],
    });
    await t.ingestApplied(sourceId, { entries: [entry('e', [{ id: 'name', value: 'Hi', language: 'EN' }])] });
    const read = await t.readOne(sourceId, 'e');
    expect(valuesOf(read.body)).toEqual({ 'name@en': 'Hi', 'name@de': 'Hallo' });
    const stamps = new Set(read.body.properties.map((p: { lastUpdated: string }) => p.lastUpdated));
    expect(stamps.size).toBe(1);
  });

  it('lists split by the current delimiter after the delimiter changes', async () => {
    const sourceId = t.newSourceId();
    await t.ingestApplied(sourceId, { entries: [entry('e', [{ id: 'tags', value: ['a;1', 'b'] }])] });
    expect(valuesOf((await t.readOne(sourceId, 'e')).body)).toEqual({ tags: ['a;1', 'b'] });
    await t.putProperty(sourceId, 'tags', { delimiter: ';' });
    const read = await t.readOne(sourceId, 'e');
    expect(valuesOf(read.body)).toEqual({ tags: ['a', '1,b'] });
    expect(read.body.properties[0].delimiter).toBe(';');
  });

  it('a stored value incompatible with the current type is 409 after a type change', async () => {
    const sourceId = t.newSourceId();
    await t.ingestApplied(sourceId, { entries: [entry('e', [{ id: 'size', value: 'large' }]), entry('f', [{ id: 'other', value: 1 }])] });
    expect((await t.putProperty(sourceId, 'size', { type: 'Integer' })).status).toBe(200);
    const one = await t.readOne(sourceId, 'e');
    expect(one.status).toBe(409);
    expect(one.headers['content-type']).toBe('application/problem+json');
    expect(one.body.detail).toMatch(/size/);
    expect((await t.readMany(sourceId, ['f', 'e'])).status).toBe(409);
    expect((await t.readMany(sourceId, ['f'])).status).toBe(200);
  });

  it('a compatible type change retypes stored values on read', async () => {
    const sourceId = t.newSourceId();
    await t.ingestApplied(sourceId, { entries: [entry('e', [{ id: 'amount', value: 12 }])] });
    await t.putProperty(sourceId, 'amount', { type: 'Text' });
    expect((await t.readOne(sourceId, 'e')).body.properties[0]).toMatchObject({ value: '12', type: 'Text' });
  });
});

describe('read permissions (not shown in the spec: any tenant credential granted the source)', () => {
  let t: SourcesTestbed;
  beforeAll(async () => {
    t = await startSourcesTestbed();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('without a credential: 401', async () => {
    expect((await t.readMany(t.newSourceId(), ['a'], {})).status).toBe(401);
  });

  it('a token holding only read:events may read', async () => {
    const sourceId = t.newSourceId();
    await t.ingestApplied(sourceId, { entries: [entry('a', [{ id: 'n', value: 1 }])] });
    const read = await t.readMany(sourceId, ['a'], await t.bearer({ scope: 'read:events' }));
    expect(read.status).toBe(200);
    expect(read.body.items).toHaveLength(1);
  });

  it('an application granted other sources only: 403', async () => {
    const sourceId = t.newSourceId();
    await t.ingestApplied(sourceId, { entries: [entry('a', [{ id: 'n', value: 1 }])] });
    const headers = await t.application({ scopes: ['read:events'], sources: ['something-else'] });
    expect((await t.readOne(sourceId, 'a', headers)).status).toBe(403);
  });
});
