import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestEmulator, type Answer, type TestEmulator } from './helpers.js';

/**
 * The published description and the emulator say the same about the requests they take, where they
 * once did not: for each rule, a request is valid against the document served by the emulator
 * (Ajv, ECMA-262 Unicode patterns as JSON Schema wants) exactly when the emulator accepts it.
 * Schemathesis checks the same from outside (test/emulator/schemathesis.test.ts); these name the
 * rule that broke.
 */

type Json = Record<string, any>;

let t: TestEmulator;
let doc: Json;
const ajv = new Ajv2020({ strict: false, allErrors: true });

/** A validator for a schema of the document, its `$ref`s resolved against the document's components. */
function validator(schema: Json): (value: unknown) => boolean {
  const validate = ajv.compile({ ...schema, components: doc.components });
  return (value) => validate(value) as boolean;
}

function operation(method: string, path: string): Json {
  const found = doc.paths[path]?.[method];
  if (found === undefined) throw new Error(`${method} ${path} is not in the document`);
  return found as Json;
}

beforeAll(async () => {
  t = await startTestEmulator();
  doc = (await call<Json>('GET', `${t.em.url}/openapi/platform-api.json`)).body;
});
afterAll(async () => {
  await t.close();
});

describe('GET /oauth2/auth: the parameters the emulator needs are the required ones', () => {
  const valid: Record<string, string> = {
    response_type: 'code',
    client_id: 'dev-client',
    redirect_uri: 'http://127.0.0.1:3000/callback',
    scope: 'openid',
    state: 's',
    code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    code_challenge_method: 'S256',
    audience: 'dev-tenant',
    nonce: 'n',
  };
  const authorize = (params: Record<string, string>): Promise<Answer> => call('GET', `${t.em.url}/oauth2/auth?${new URLSearchParams(params).toString()}`);
  const issuesCode = (answer: Answer): boolean => answer.status === 302 && new URL(String(answer.headers.location)).searchParams.has('code');

  it('a parameter is required in the document exactly when the emulator issues no code without it (nor with it empty)', async () => {
    const params = operation('get', '/oauth2/auth').parameters as Json[];
    expect(params.map((p) => p.name).sort()).toEqual(Object.keys(valid).sort());
    expect(issuesCode(await authorize(valid))).toBe(true);
    for (const param of params) {
      const { [param.name as string]: _dropped, ...without } = valid;
      expect(issuesCode(await authorize(without)), `without ${param.name}`).toBe(!param.required);
      expect(issuesCode(await authorize({ ...valid, [param.name]: '' })), `${param.name} empty`).toBe(!param.required);
      // An empty value is what schemathesis sends for "any string": the document must not call it valid.
      if (param.required) expect(validator(param.schema)(''), `${param.name} schema takes ''`).toBe(false);
    }
  });

  it('the document states the values the emulator takes for response_type, code_challenge_method and code_challenge', async () => {
    const schemaOf = (name: string) => validator((operation('get', '/oauth2/auth').parameters as Json[]).find((p) => p.name === name)!.schema);
    for (const [name, value] of [
      ['response_type', 'token'],
      ['code_challenge_method', 'plain'],
      ['code_challenge', 'short'],
      ['code_challenge', `${valid.code_challenge}=`],
    ] as const) {
      expect(schemaOf(name)(value), `${name}=${value}`).toBe(false);
      expect(issuesCode(await authorize({ ...valid, [name]: value })), `${name}=${value}`).toBe(false);
    }
  });
});

describe('typed ingest: property IDs (pattern and length) and the other shapes the document now states', () => {
  const request = (propertyId: string, language?: string, entryId = 'e-1') => ({
    entries: [{ id: entryId, properties: [{ id: propertyId, value: 'x', ...(language === undefined ? {} : { language }) }] }],
  });
  let source = 0;
  /** A fresh source each time: an inferred type does not carry over into the next request. */
  const ingest = (body: unknown) => call('POST', `${t.em.url}/sources/agree-${++source}`, { headers: t.auth, json: body });
  const documentTakes = () => validator({ $ref: '#/components/schemas/TypedIngestRequest' });

  const astralLetter = '\u{1D400}'; // MATHEMATICAL BOLD CAPITAL A: a letter of two UTF-16 units
  const ids = [
    'price',
    'Price',
    'a.b:c-d_e',
    '9lives',
    'größe',
    'İstanbul',
    'ціна',
    '価格',
    astralLetter.repeat(128),
    'a'.repeat(128),
    'a'.repeat(129),
    astralLetter.repeat(129),
    '',
    ' price',
    'price ',
    'pri ce',
    '_id',
    '@meta',
    '$x',
    '-x',
    '.x',
    'a/b',
    'a?b',
    'émoji😀',
    'id',
    'ID',
    'Id',
    'lastUpdated',
    'LASTUPDATED',
    'language',
    'Language',
    'ids',
    'xid',
    'languages',
    'last_updated',
  ];

  it.each(ids.map((id) => [id.length > 20 ? `${id.slice(0, 12)}… (${[...id].length})` : JSON.stringify(id), id]))(
    'property id %s: the document and the emulator agree',
    async (_label, id) => {
      const body = request(id);
      const answer = await ingest(body);
      expect([202, 400]).toContain(answer.status);
      expect(answer.status === 202, answer.text).toBe(documentTakes()(body));
    },
  );

  it.each([
    ['en', true],
    ['en-GB', true],
    ['zh-Hant-TW', true],
    ['e', false],
    ['englishlanguage', false],
    ['en_GB', false],
    ['', false],
  ] as const)('language %s: the document says %s, as the emulator', async (language, ok) => {
    const body = { entries: [{ id: 'e', properties: [{ id: `title-${language.length}`, value: 'x', language }] }] };
    expect(documentTakes()(body)).toBe(ok);
    // A valid tag on a new property makes it LocalizedText: accepted.
    expect((await ingest(body)).status).toBe(ok ? 202 : 400);
  });

  it('entry IDs: at most 512 code points in both', async () => {
    for (const [entryId, ok] of [
      ['e'.repeat(512), true],
      ['e'.repeat(513), false],
      [astralLetter.repeat(512), true],
      [astralLetter.repeat(513), false],
    ] as const) {
      const body = request('p', undefined, entryId);
      expect(documentTakes()(body), `${[...entryId].length}`).toBe(ok);
      expect((await ingest(body)).status, `${[...entryId].length}`).toBe(ok ? 202 : 400);
    }
  });
});

describe('PUT /v1/sources/{sourceId}/properties/{propertyId}: the delimiter bounds', () => {
  beforeAll(async () => {
    expect(
      (await call('POST', `${t.em.url}/sources/delimiters`, { headers: t.auth, json: { entries: [{ id: 'e', properties: [{ id: 'tags', value: ['a'] }] }] } }))
        .status,
    ).toBe(202);
  });

  it.each([
    ['', false],
    [',', true],
    ['||', true],
    ['12345678', true],
    ['123456789', false],
    ['😀'.repeat(8), true],
    ['😀'.repeat(9), false],
  ] as const)('delimiter %j: the document says %s, as the emulator', async (delimiter, ok) => {
    const takes = validator({ $ref: '#/components/schemas/SourcePropertyUpdate' });
    expect(takes({ delimiter })).toBe(ok);
    const answer = await call('PUT', `${t.em.url}/v1/sources/delimiters/properties/tags`, { headers: t.auth, json: { delimiter } });
    expect(answer.status, answer.text).toBe(ok ? 200 : 400);
  });
});

describe('legacy import: entry IDs and property IDs are non-empty in both', () => {
  it.each([
    [{ id: 'e', properties: { p: 'v' } }, true],
    [{ id: ' ', properties: { ' ': 'v' } }, true],
    [{ id: '', properties: { p: 'v' } }, false],
    [{ id: 'e', properties: { '': 'v' } }, false],
  ] as const)('entry %j: the document says %s, as the emulator', async (entry, ok) => {
    const body = { entries: [entry] };
    expect(validator({ $ref: '#/components/schemas/LegacyImportRequest' })(body)).toBe(ok);
    for (const path of ['/datasources/legacy/import/verify', '/datasources/legacy/import']) {
      const answer = await call('POST', `${t.em.url}${path}`, { headers: t.auth, json: body });
      expect(answer.status, `${path} ${answer.text}`).toBe(ok ? (path.endsWith('verify') ? 200 : 202) : 400);
    }
  });
});

describe('typed ingest: traceparent and tracestate are any string, an invalid one ignored, as the prose says', () => {
  it('the document constrains neither header and says an invalid value is ignored; the emulator accepts and ignores it', async () => {
    const headers = (operation('post', '/sources/{sourceId}').parameters as Json[]).filter((p) => p.in === 'header');
    for (const name of ['traceparent', 'tracestate']) {
      const header = headers.find((p) => p.name === name)!;
      expect(header.schema, name).toEqual({ type: 'string' });
      expect(header.description, name).toMatch(/Any value is accepted/);
    }
    const garbage = { traceparent: 'not-a-traceparent', tracestate: 'x'.repeat(2000) };
    const answer = await call('POST', `${t.em.url}/sources/traced`, {
      headers: { ...t.auth, ...garbage },
      json: { entries: [{ id: 'traced-e', properties: [{ id: 'p', value: 'v' }] }] },
    });
    expect(answer.status, answer.text).toBe(202);
    // Ingest is asynchronous: poll the stream until the entry's event is there.
    const emitted: Array<Record<string, unknown>> = [];
    const deadline = Date.now() + 10_000;
    while (emitted.length === 0 && Date.now() < deadline) {
      const pulled = await t.pull({ limit: 100 });
      for (const event of pulled.body.events ?? [])
        if ((event as { subject?: string }).subject?.includes('traced-e')) emitted.push(event as unknown as Record<string, unknown>);
    }
    expect(emitted.length).toBeGreaterThan(0);
    for (const event of emitted) expect(event).not.toHaveProperty('traceparent');
  });
});
