import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from './helpers.js';
import { entry, startSourcesTestbed, type SourcesTestbed } from './sources-helpers.js';

describe('source property PUT (PUT /v1/sources/{sourceId}/properties/{propertyId})', () => {
  let t: SourcesTestbed;
  beforeAll(async () => {
    t = await startSourcesTestbed();
  });
  afterAll(async () => {
    await t?.close();
  });

  async function newSource(): Promise<string> {
    const sourceId = t.newSourceId();
    await t.ingestApplied(sourceId, {
      entries: [
        entry('seed', [
          { id: 'price', value: 2.5 },
          { id: 'tags', value: ['a'] },
        ]),
      ],
    });
    return sourceId;
  }

  it('an inferred property is registered with its type once the batch is applied', async () => {
    const sourceId = await newSource();
    const answer = await t.putProperty(sourceId, 'PRICE', {});
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ id: 'price', displayName: 'price', description: '', type: 'Decimal', delimiter: ',', state: 'Active' });
  });

  it('creates a property with no field required: displayName defaults to the id', async () => {
    const sourceId = await newSource();
    const answer = await t.putProperty(sourceId, 'Colour', { description: 'Main colour' });
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ id: 'colour', displayName: 'colour', description: 'Main colour', type: null, delimiter: ',', state: 'Active' });
  });

  it('null fields preserve current values', async () => {
    const sourceId = await newSource();
    await t.putProperty(sourceId, 'tags', { displayName: 'Tags', description: 'Labels', delimiter: '|' });
    const answer = await t.putProperty(sourceId, 'tags', { displayName: null, description: null, delimiter: null });
    expect(answer.body).toMatchObject({ displayName: 'Tags', description: 'Labels', delimiter: '|', type: 'List' });
  });

  it('omitted fields preserve current values too', async () => {
    const sourceId = await newSource();
    await t.putProperty(sourceId, 'tags', { displayName: 'Tags', description: 'Labels' });
    expect((await t.putProperty(sourceId, 'tags', { delimiter: ';' })).body).toMatchObject({ displayName: 'Tags', description: 'Labels', delimiter: ';' });
  });

  it('an empty description clears it', async () => {
    const sourceId = await newSource();
    await t.putProperty(sourceId, 'tags', { description: 'Labels' });
    expect((await t.putProperty(sourceId, 'tags', { description: '' })).body.description).toBe('');
  });

  it('a type change answers Updating, then the property becomes Active', async () => {
    const sourceId = await newSource();
    const changed = await t.putProperty(sourceId, 'price', { type: 'Text' });
    expect(changed.body).toMatchObject({ type: 'Text', state: 'Updating' });
    await t.em.idle();
    expect((await t.putProperty(sourceId, 'price', {})).body).toMatchObject({ type: 'Text', state: 'Active' });
  });

  it('the same type again is no change: the property stays Active', async () => {
    const sourceId = await newSource();
    expect((await t.putProperty(sourceId, 'price', { type: 'Decimal' })).body.state).toBe('Active');
  });

  it('a property created with a type is used by later ingest instead of inference', async () => {
    const sourceId = await newSource();
    await t.putProperty(sourceId, 'code', { displayName: 'Code', type: 'Text' });
    const answer = await t.ingest(sourceId, { entries: [entry('e', [{ id: 'code', value: 12 }])] });
    expect(answer.status).toBe(400);
    expect(answer.body.errors['entries[0].properties[0].value'][0]).toMatch(/Text/);
  });

  it('a property created without a type keeps its delimiter when ingest infers a list', async () => {
    const sourceId = await newSource();
    await t.putProperty(sourceId, 'colours', { delimiter: '/' });
    const answer = await t.ingest(sourceId, { entries: [entry('e', [{ id: 'colours', value: ['red', 'blue'] }])] });
    expect(answer.body.newPropertiesFound).toEqual([{ id: 'colours', type: 'List', delimiter: '/' }]);
  });

  it('invalid fields are 400 with errors keyed by field', async () => {
    const sourceId = await newSource();
    const answer = await t.putProperty(sourceId, 'tags', { displayName: 5, delimiter: '', type: 'Money' });
    expect(answer.status).toBe(400);
    expect(Object.keys(answer.body.errors).sort()).toEqual(['delimiter', 'displayName', 'type']);
  });

  it('a reserved property id is 400', async () => {
    const sourceId = await newSource();
    const answer = await t.putProperty(sourceId, '_id', { displayName: 'x' });
    expect(answer.status).toBe(400);
    expect(Object.keys(answer.body.errors)).toEqual(['propertyId']);
  });

  it('an unknown source is 404', async () => {
    expect((await t.putProperty(t.newSourceId(), 'p', { displayName: 'P' })).status).toBe(404);
  });

  it('needs write:sources: a read:events token is 403', async () => {
    const sourceId = await newSource();
    expect((await t.putProperty(sourceId, 'p', {}, await t.bearer({ scope: 'read:events' }))).status).toBe(403);
  });
});

describe('source PATCH (PATCH /v1/sources/{sourceId})', () => {
  let t: SourcesTestbed;
  beforeAll(async () => {
    t = await startSourcesTestbed();
  });
  afterAll(async () => {
    await t?.close();
  });

  async function newSource(): Promise<string> {
    const sourceId = t.newSourceId();
    await t.ingestApplied(sourceId, { entries: [entry('seed', [{ id: 'n', value: 1 }])] });
    return sourceId;
  }

  it('a source created by ingest is Active and Generic, named after its id', async () => {
    const sourceId = await newSource();
    const answer = await t.patchSource(sourceId, {});
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({
      id: sourceId,
      name: sourceId,
      description: '',
      status: 'Active',
      type: 'Generic',
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
  });

  it('updates name and description and moves updatedAt', async () => {
    const sourceId = await newSource();
    const before = (await t.patchSource(sourceId, {})).body;
    const answer = await t.patchSource(sourceId, { name: 'Products', description: 'Catalogue' });
    expect(answer.body).toMatchObject({ name: 'Products', description: 'Catalogue', createdAt: before.createdAt });
    expect(Date.parse(answer.body.updatedAt)).toBeGreaterThanOrEqual(Date.parse(before.updatedAt));
  });

  it('omitted or null fields remain unchanged', async () => {
    const sourceId = await newSource();
    await t.patchSource(sourceId, { name: 'Products', description: 'Catalogue' });
    expect((await t.patchSource(sourceId, { name: null })).body).toMatchObject({ name: 'Products', description: 'Catalogue' });
    expect((await t.patchSource(sourceId, { description: 'New' })).body).toMatchObject({ name: 'Products', description: 'New' });
  });

  it('an empty description clears it', async () => {
    const sourceId = await newSource();
    await t.patchSource(sourceId, { description: 'Catalogue' });
    expect((await t.patchSource(sourceId, { description: '' })).body.description).toBe('');
  });

  it('an empty name or a non-string field is 400', async () => {
    const sourceId = await newSource();
    const answer = await t.patchSource(sourceId, { name: '', description: 3 });
    expect(answer.status).toBe(400);
    expect(Object.keys(answer.body.errors).sort()).toEqual(['description', 'name']);
  });

  it('a body that is not JSON is 415', async () => {
    const sourceId = await newSource();
    const answer = await call('PATCH', `${t.url}/v1/sources/${sourceId}`, { headers: { ...t.auth, 'content-type': 'text/plain' }, body: 'name=x' });
    expect(answer.status).toBe(415);
  });

  it('an unknown source is 404', async () => {
    expect((await t.patchSource(t.newSourceId(), { name: 'x' })).status).toBe(404);
  });

  it('the tenant comes from the credential: another tenant does not see the source', async () => {
    const sourceId = await newSource();
    const other = await t.application({ scopes: ['write:sources'] });
    // Same tenant through a new application sees it...
    expect((await t.patchSource(sourceId, {}, other)).status).toBe(200);
    // ...an application of another tenant does not.
    const clientId = `other-${sourceId}`;
    await call('POST', `${t.url}/_emulator/applications`, {
      json: { tenant: `tenant-${sourceId}`, clientId, clientSecret: 's3cret-value', scopes: ['write:sources'] },
    });
    const foreign = await t.bearer({ client_id: clientId, client_secret: 's3cret-value', audience: `tenant-${sourceId}` });
    expect((await t.patchSource(sourceId, {}, foreign)).status).toBe(404);
  });
});
