import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import SwaggerParser from '@apidevtools/swagger-parser';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parsePostQuery } from '../../src/emulator/destinations/query/post-body.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { renderOpenApiDocs } from '../../src/emulator/openapi/write-docs.js';
import { emulatorOperations } from '../../src/emulator/start.js';
import { ROOT } from '../docs/doc-commands.js';
import { call, tokenFor } from './helpers.js';

/**
 * The OpenAPI 3.1 descriptions the emulator publishes: the spec's ingest interface (1.0.0), the
 * whole emulated API, and each destination's own. Generated from the routes' declarations; checked
 * here with the tools a user would run (`redocly lint`, recommended rules; swagger-parser), and
 * against the files under docs/openapi/.
 */
const run = promisify(execFile);
type Doc = {
  openapi: string;
  info: Record<string, unknown>;
  paths: Record<string, Record<string, { operationId: string; security: unknown[]; tags: string[] }>>;
  components: { schemas: Record<string, unknown> };
};

let emulator: RunningEmulator;
let ingest: Doc;
let platform: Doc;
const destinationDocs: Record<string, Doc> = {};

beforeAll(async () => {
  emulator = await startEmulator({ port: 0 });
  ingest = (await call<Doc>('GET', `${emulator.url}/openapi.json`)).body;
  platform = (await call<Doc>('GET', `${emulator.url}/openapi/platform-api.json`)).body;
  // Destinations of every kind: public, protected, facets, aliases, several languages, no entries yet.
  const auth = { authorization: `Bearer ${(await tokenFor(emulator.url)).body.access_token}` };
  const sourceId = `lint-${randomUUID()}`;
  const ingested = await call('POST', `${emulator.url}/sources/${sourceId}`, {
    headers: auth,
    json: {
      entries: [
        {
          id: 'p1',
          properties: [
            { id: 'title', value: 'Kettle', language: 'en' },
            { id: 'price', value: 25.5 },
            { id: 'stock', value: 3 },
            { id: 'tags', value: ['a'] },
            { id: 'active', value: true },
          ],
        },
      ],
    },
  });
  expect(ingested.status).toBe(202);
  await emulator.idle();
  const seeds = {
    public: {
      customer: 'acme',
      destination: 'shop',
      sourceId,
      languages: ['en', 'da'],
      endpoints: [{ name: 'products', facets: [{ propertyId: 'tags', size: 5, header: { en: 'Tags' } }] }],
    },
    protected: {
      customer: 'acme',
      destination: 'vault',
      protected: true,
      sourceId,
      endpoints: [
        { name: 'items', properties: [{ id: 'title', alias: 'name' }, { id: 'price' }] },
        { name: 'ids', properties: [] },
      ],
    },
    empty: { customer: 'acme', destination: 'void', sourceId: `none-${randomUUID()}`, endpoints: [{ name: 'nothing' }] },
  };
  for (const [kind, seed] of Object.entries(seeds)) {
    const seeded = await call<{ apiVersionId: string }>('POST', `${emulator.url}/_emulator/destinations`, { json: seed });
    expect(seeded.status).toBe(201);
    const headers: Record<string, string> = {};
    if (seed.customer && 'protected' in seed) {
      const token = await call<{ accessToken: string }>('POST', `${emulator.url}/destinations/${seed.destination}/token`, {
        json: { clientId: 'dev-client', clientSecret: 'dev-secret' },
      });
      headers.authorization = `Bearer ${token.body.accessToken}`;
    }
    const doc = await call<Doc>('GET', `${emulator.url}/${seed.customer}/${seed.destination}/v1/openapi`, { headers });
    expect(doc.status).toBe(200);
    destinationDocs[kind] = doc.body;
  }
});
afterAll(() => emulator?.close());

function allDocuments(): Array<[string, Doc]> {
  return [
    ['ingest', ingest],
    ['platform-api', platform],
    ...Object.entries(destinationDocs).map(([kind, doc]): [string, Doc] => [`destination (${kind})`, doc]),
  ];
}

describe('the published OpenAPI descriptions', () => {
  it('docs/openapi/ holds what the emulator serves (run `npm run docs:openapi` after changing a route)', () => {
    for (const [name, content] of Object.entries(renderOpenApiDocs())) {
      expect(readFileSync(join(ROOT, 'docs', 'openapi', name), 'utf8'), `docs/openapi/${name} is out of date: run \`npm run docs:openapi\` and commit it`).toBe(
        content,
      );
      const served = name === 'ingest.json' ? ingest : platform;
      expect({ ...served, servers: [] }).toEqual({ ...JSON.parse(content), servers: [] });
    }
  });

  it("the ingest description is the spec's: OpenAPI 3.1, version 1.0.0, typed ingest and legacy import only", () => {
    expect(ingest.openapi).toBe('3.1.0');
    expect(ingest.info).toMatchObject({ version: '1.0.0', license: { name: 'MIT' }, contact: { name: expect.any(String) } });
    expect(Object.keys(ingest.paths).sort()).toEqual(['/datasources/{dataSource}/import', '/datasources/{dataSource}/import/verify', '/sources/{sourceId}']);
  });

  it('the whole-API description lists every route the emulator serves, once, with its security', () => {
    const served = emulatorOperations().map((operation) => `${operation.method} ${operation.path}`);
    const described = Object.entries(platform.paths).flatMap(([path, item]) => Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`));
    expect(described.sort()).toEqual([...served].sort());
    expect(new Set(served).size).toBe(served.length);
    const ids = Object.values(platform.paths).flatMap((item) => Object.values(item).map((operation) => operation.operationId));
    expect(new Set(ids).size).toBe(ids.length);
    const operation = (path: string, method: string) => platform.paths[path]![method]!;
    expect(operation('/v1/event-destinations/{id}/pull', 'post').security).toEqual([{ tenantToken: ['read:events'] }, { apiKey: [] }]);
    expect(operation('/sources/{sourceId}', 'post').security).toEqual([{ tenantToken: ['write:sources'] }, { apiKey: [] }]);
    expect(operation('/{customer}/{destination}/v1/{endpoint}', 'get').security).toEqual([{}, { destinationToken: [] }]);
    expect(operation('/oauth2/token', 'post').security).toEqual([]);
    const emulatorOnly = Object.entries(platform.paths).filter(([path]) => path.startsWith('/_emulator/'));
    expect(emulatorOnly.length).toBeGreaterThan(0);
    for (const [, item] of emulatorOnly) for (const op of Object.values(item)) expect(op.tags).toEqual(['Emulator only']);
  });

  it('every document passes `redocly lint` (recommended rules) with no error and no warning', { timeout: 120_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dw-openapi-'));
    const files = allDocuments().map(([name, doc]) => {
      const file = join(dir, `${name.replace(/\W+/g, '-')}.json`);
      writeFileSync(file, JSON.stringify(doc, null, 2));
      return file;
    });
    const redocly = join(ROOT, 'node_modules', '@redocly', 'cli', 'bin', 'cli.js');
    const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1', FORCE_COLOR: '0' };
    const lint = async (file: string) => {
      const result = await run(process.execPath, [redocly, 'lint', '--extends', 'recommended', '--format', 'json', file], {
        cwd: dir,
        env,
        maxBuffer: 16 * 1024 * 1024,
      }).catch((err: { stdout?: string; stderr?: string }) => ({ stdout: err.stdout ?? '', stderr: err.stderr ?? '' }));
      return JSON.parse(result.stdout) as {
        totals: { errors: number; warnings: number };
        problems: Array<{ ruleId: string; message: string; location: Array<{ pointer: string }> }>;
      };
    };
    for (const [index, report] of (await Promise.all(files.map(lint))).entries()) {
      const problems = report.problems.map((p) => `${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`);
      expect(problems, files[index]).toEqual([]);
      expect(report.totals, files[index]).toMatchObject({ errors: 0, warnings: 0 });
    }
  });

  it('swagger-parser validates and dereferences every document', async () => {
    for (const [name, doc] of allDocuments()) {
      await expect(SwaggerParser.validate(structuredClone(doc) as never), name).resolves.toBeDefined();
      const dereferenced = await SwaggerParser.dereference(structuredClone(doc) as never);
      expect(references(dereferenced), name).toEqual([]);
    }
  });
});

/** `$ref`s left in a (possibly circular) dereferenced document. */
function references(value: unknown, seen = new Set<unknown>()): string[] {
  if (value === null || typeof value !== 'object' || seen.has(value)) return [];
  seen.add(value);
  return Object.entries(value).flatMap(([key, item]) => (key === '$ref' ? [String(item)] : references(item, seen)));
}

describe('request schemas of the description agree with what the emulator accepts', () => {
  const ajv = new Ajv2020({ strict: false });
  const schemaOf = (name: string) => {
    ajv.addSchema(platform as object, 'platform');
    return ajv.compile({ $ref: `platform#/components/schemas/${name}` });
  };

  it('typed ingest: what the schema refuses structurally, the emulator refuses with a 400', async () => {
    const validate = schemaOf('TypedIngestRequest');
    ajv.removeSchema('platform');
    const auth = { authorization: `Bearer ${(await tokenFor(emulator.url)).body.access_token}` };
    const cases: Array<[unknown, boolean]> = [
      [{ entries: [{ id: 'a', properties: [{ id: 't', value: 'x' }] }] }, true],
      [{ entries: [{ id: 'a', properties: [{ id: 't', value: true }], extra: 'ignored' }] }, true],
      [{ entries: [] }, false],
      [{ entries: [{ id: '', properties: [] }] }, false],
      [{ entries: [{ id: 'a', properties: [{ id: 't' }] }] }, false],
      [{ entries: [{ id: 'a', properties: [{ id: 't', value: { nested: 1 } }] }] }, false],
    ];
    for (const [body, ok] of cases) {
      expect(validate(body), JSON.stringify(body)).toBe(ok);
      const answer = await call('POST', `${emulator.url}/sources/s-${randomUUID()}`, { headers: auth, json: body });
      expect(answer.status, JSON.stringify(body)).toBe(ok ? 202 : 400);
    }
  });

  it('destination POST queries: the schema and the parser take and refuse the same bodies', () => {
    const validate = schemaOf('DestinationQueryRequest');
    ajv.removeSchema('platform');
    const accepts = (body: unknown) => {
      try {
        parsePostQuery(body);
        return true;
      } catch {
        return false;
      }
    };
    const cases: unknown[] = [
      {},
      { select: ['id'], top: 10, skip: 0, includeTotals: true, includeMeta: false, listIds: null },
      { filter: [{ must: { color: ['red'], price: { operator: 'LessThan', values: [50] } }, must_not: { tags: { values: ['x'], match: 'All' } } }] },
      { sortAsc: ['price'], after: 'x', language: 'all', search: ['ket*'], searchOn: ['title'], caseInsensitiveSearch: true },
      { period: { since: '2024-05-01T00:00:00.0000000Z' } },
      { unknown: 1 },
      { top: 'ten' },
      { top: -1 },
      { filter: {} },
      { filter: [{ should: {} }] },
      { filter: [{ must: { color: { operator: 'Near', values: [1] } } }] },
      { filter: [{ must: { color: { values: [] } } }] },
      { select: 'id' },
      [],
      // What an independent validator found the two disagreeing on.
      { period: { since: '2024-05-01T00:00:00.0000000Z', extra: 1 } },
      { filter: [{ must: { color: { values: ['red'], extra: 1 } } }] },
      { filter: [{ must: { color: { operator: null, values: ['red'] } } }] },
      { filter: [{ must: { color: { match: null, values: ['red'] } } }] },
      { search: [''] },
      { search: ['', 'x'] },
      { filter: [{ must: { color: 'red' } }] },
      { periodSince: '2024-05-01T00:00:00.0000000Z' },
    ];
    for (const body of cases) expect(validate(body), JSON.stringify(body)).toBe(accepts(body));
  });
});
