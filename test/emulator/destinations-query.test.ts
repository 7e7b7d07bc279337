import { gunzipSync } from 'node:zlib';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { catalogue, entry, startDestinationHarness, type DestinationHarness } from './destinations-fixtures.js';

let h: DestinationHarness;
let base: string;
beforeAll(async () => {
  h = await startDestinationHarness();
  ({ base } = await h.fresh(catalogue()));
});
afterAll(() => h.close());

type Body = { language: string; total?: number; results: Array<Record<string, any>>; facets?: any[]; errors?: Record<string, string[]> };

async function get(path: string): Promise<{ status: number; body: Body }> {
  const res = await fetch(`${base}/${path}`);
  return { status: res.status, body: (await res.json()) as Body };
}

async function post(body: unknown, endpoint = 'products'): Promise<{ status: number; body: Body }> {
  const res = await fetch(`${base}/${endpoint}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as Body };
}

const ids = (b: Body) => b.results.map((r) => r.id);

describe('destination query: defaults and projection', () => {
  it('without parameters returns the first 50 results in the default language', async () => {
    const many = Array.from({ length: 60 }, (_, i) => entry(`e${String(i).padStart(3, '0')}`, '2024-01-01T00:00:00.000Z', [['name', 'Text', `n${i}`]]));
    const other = await h.fresh(many, { endpoints: [{ name: 'items' }] });
    const res = await fetch(`${other.base}/items`);
    const body = (await res.json()) as Body;
    expect(res.status).toBe(200);
    expect(body.language).toBe('en');
    expect(body.results).toHaveLength(50);
    expect(body.results[0]).toEqual({ id: 'e000', name: 'n0' });
    expect(body.total).toBeUndefined();
    expect(body.facets).toBeUndefined();
  });

  it('an Integer beyond 2^53 is written with its exact digits', async () => {
    const big = await h.fresh([entry('b1', '2024-01-01T00:00:00.000Z', [['count', 'Integer', 9007199254740993n]])], { endpoints: [{ name: 'items' }] });
    const res = await fetch(`${big.base}/items?id=b1`);
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('"count":9007199254740993');
  });

  it('a POST without a body is a query without parameters', async () => {
    const res = await fetch(`${base}/products`, { method: 'POST' });
    expect(res.status).toBe(200);
    expect(((await res.json()) as Body).results).toHaveLength(10);
  });

  it('id (GET repeated, POST body) gets entries by ID', async () => {
    expect(ids((await get('products?id=p03&id=p07')).body)).toEqual(['p03', 'p07']);
    expect(ids((await post({ id: ['p01'] })).body)).toEqual(['p01']);
    expect(ids((await post({ filter: [{ must: { id: ['p02', 'p04'] } }] })).body)).toEqual(['p02', 'p04']);
  });

  it('select returns only the chosen exposed names (aliases), id only when chosen', async () => {
    const aliased = await h.fresh(catalogue(), { endpoints: [{ name: 'p', properties: [{ id: 'title', alias: 'name' }, { id: 'price' }] }] });
    const res = await fetch(`${aliased.base}/p?select=name&id=p01`);
    expect(((await res.json()) as Body).results).toEqual([{ name: 'Winter shirt 1' }]);
    const withId = await fetch(`${aliased.base}/p?select=name&select=id&id=p01`);
    expect(((await withId.json()) as Body).results).toEqual([{ id: 'p01', name: 'Winter shirt 1' }]);
    const all = (await (await fetch(`${aliased.base}/p?id=p01`)).json()) as Body;
    expect(all.results).toEqual([{ id: 'p01', name: 'Winter shirt 1', price: 12.5 }]);
    const byRawId = await fetch(`${aliased.base}/p?select=title`);
    expect(byRawId.status).toBe(400);
    expect(Object.keys(((await byRawId.json()) as Body).errors!)).toEqual(['select[0]']);
    expect((await fetch(`${aliased.base}/p?select=color`)).status).toBe(400);
  });

  it('listIds returns only IDs', async () => {
    const { body } = await get('products?listIds=true&top=3');
    expect(body.results).toEqual([{ id: 'p00' }, { id: 'p01' }, { id: 'p02' }]);
  });

  it('includeTotals adds total (all matches, independent of paging)', async () => {
    const { body } = await get('products?includeTotals=true&top=2&color=red');
    expect(body.total).toBe(4);
    expect(body.results).toHaveLength(2);
  });

  it('includeMeta adds @meta with @timestamp, @id, @type and @language', async () => {
    const { body } = await post({ includeMeta: true, id: ['p02'], language: 'da' });
    expect(body.results[0]!['@meta']).toEqual({ '@timestamp': '2024-05-12T08:00:00.000Z', '@id': 'p02', '@type': 'products', '@language': 'da' });
  });
});

describe('destination query: paging and sorting', () => {
  it('top and skip page through results', async () => {
    expect(ids((await get('products?top=3&skip=4')).body)).toEqual(['p04', 'p05', 'p06']);
    expect(ids((await post({ top: 2, skip: 8 })).body)).toEqual(['p08', 'p09']);
  });

  it('top plus skip beyond the 10,000 window is refused with 400', async () => {
    const r = await get('products?top=100&skip=9950');
    expect(r.status).toBe(400);
    expect(r.body.errors!.skip).toBeDefined();
    expect((await post({ top: 10_001 })).status).toBe(400);
    expect((await get('products?top=50&skip=9950')).status).toBe(200);
  });

  it('sortAsc and sortDesc order by several properties in the given order', async () => {
    const { body } = await get('products?sortAsc=color&sortDesc=price&select=color&select=price');
    expect(body.results.map((r) => `${r.color}:${r.price}`)).toEqual([
      'black:25',
      'blue:32.5',
      'blue:20',
      'blue:12.5',
      'green:15',
      'red:30',
      'red:22.5',
      'red:17.5',
      'red:10',
      'white:27.5',
    ]);
  });

  it('after continues after the given sort value (GET and POST)', async () => {
    const first = await get('products?sortDesc=stock&top=4&listIds=true');
    expect(ids(first.body)).toEqual(['p09', 'p08', 'p07', 'p06']);
    const next = await get('products?sortDesc=stock&top=4&listIds=true&after=60');
    expect(ids(next.body)).toEqual(['p05', 'p04', 'p03', 'p02']);
    const viaPost = await post({ sortAsc: ['released'], after: '2024-05-15T12:00:00.0000000Z', listIds: true });
    expect(ids(viaPost.body)).toEqual(['p05', 'p06', 'p07', 'p08']);
  });

  it('after without a sort is refused', async () => {
    expect((await get('products?after=3')).status).toBe(400);
    expect((await post({ after: 'x' })).status).toBe(400);
  });
});

describe('destination query: language', () => {
  it('language picks the localized values', async () => {
    const { body } = await get('products?language=da&id=p01&select=id&select=title');
    expect(body.language).toBe('da');
    expect(body.results).toEqual([{ id: 'p01', title: 'Vinter skjorte 1' }]);
  });

  it('language=all returns one result per language, top applying to those', async () => {
    const { body } = await post({ language: 'all', top: 4, includeMeta: true, select: ['title'] });
    expect(body.language).toBe('all');
    expect(body.results.map((r) => `${r['@meta']['@id']}/${r['@meta']['@language']}/${r.title}`)).toEqual([
      'p00/en/Summer shirt 0',
      'p00/da/Sommer skjorte 0',
      'p01/en/Winter shirt 1',
      'p01/da/Vinter skjorte 1',
    ]);
  });

  it('an unknown language is refused', async () => {
    expect((await get('products?language=fr')).status).toBe(400);
  });
});

describe('destination query: search', () => {
  it('a phrase without wildcard matches the entire value', async () => {
    expect(ids((await get('products?search=Winter%20shirt%201')).body)).toEqual(['p01']);
    expect(ids((await get('products?search=Winter')).body)).toEqual([]);
  });

  it('*v ends with, v* begins with, *v* contains', async () => {
    expect(ids((await get('products?search=*shirt%203')).body)).toEqual(['p03']);
    expect(ids((await get('products?search=Summer*&top=2')).body)).toEqual(['p00', 'p02']);
    expect(ids((await get('products?search=*ee*')).body)).toEqual(['p02']);
  });

  it('several phrases combine with AND', async () => {
    expect(ids((await post({ search: ['Summer*', 'red'] })).body)).toEqual(['p00', 'p08']);
  });

  it('searchOn restricts the searched properties', async () => {
    expect(ids((await post({ search: ['*e*'], searchOn: ['color'] })).body)).toEqual(['p00', 'p01', 'p02', 'p03', 'p04', 'p05', 'p07', 'p08', 'p09']);
    expect(ids((await post({ search: ['sale'], searchOn: ['tags'] })).body)).toEqual(['p00', 'p01', 'p03', 'p04', 'p06', 'p07', 'p09']);
    expect((await post({ search: ['x'], searchOn: ['nope'] })).status).toBe(400);
  });

  it('search is case sensitive unless caseInsensitiveSearch', async () => {
    expect(ids((await get('products?search=RED')).body)).toEqual([]);
    expect(ids((await get('products?search=RED&caseInsensitiveSearch=true')).body)).toEqual(['p00', 'p03', 'p05', 'p08']);
  });
});

describe('destination query: period', () => {
  it('periodSince and periodBefore bound the modification time (exclusive), in UTC', async () => {
    const { body } = await get(
      `products?periodSince=${encodeURIComponent('2024-05-12T08:00:00.0000000Z')}&periodBefore=${encodeURIComponent('2024-05-15T10:00:00.0000000+02:00')}`,
    );
    expect(ids(body)).toEqual(['p03', 'p04']);
    const viaPost = await post({ period: { since: '2024-05-18T08:00:00.0000000Z' } });
    expect(ids(viaPost.body)).toEqual(['p09']);
  });

  it('a period outside the datetime format is refused', async () => {
    const r = await get('products?periodSince=last-week');
    expect(r.status).toBe(400);
    expect(r.body.errors!.periodSince).toBeDefined();
    expect((await post({ period: { before: '2024-13-01T00:00:00Z' } })).status).toBe(400);
  });
});

describe('destination query: GET filters', () => {
  it('equality filters AND across properties and OR within one property', async () => {
    expect(ids((await get('products?color=red&color=blue&active=true')).body)).toEqual(['p00', 'p04', 'p08']);
    expect(ids((await get('products?stock=30')).body)).toEqual(['p03']);
    expect(ids((await get('products?tags=new&color=blue')).body)).toEqual(['p09']);
  });

  it('a filter on an unknown property or with a mistyped value is refused', async () => {
    expect((await get('products?size=XL')).body.errors!.size).toBeDefined();
    expect((await get('products?stock=many')).body.errors!['stock.values[0]']).toBeDefined();
  });
});

describe('destination query: POST filter', () => {
  it('queries combine with OR; must and must_not within one query', async () => {
    const { body } = await post({
      filter: [{ must: { color: ['red'] }, must_not: { active: ['true'] } }, { must: { color: ['white'] } }],
    });
    expect(ids(body)).toEqual(['p03', 'p05', 'p07']);
  });

  it('an empty filter matches everything', async () => {
    expect((await post({ filter: [], includeTotals: true })).body.total).toBe(10);
  });

  it('array criteria match ANY value, also of a list property', async () => {
    expect(ids((await post({ filter: [{ must: { color: ['green', 'black'] } }] })).body)).toEqual(['p02', 'p06']);
    expect(ids((await post({ filter: [{ must: { tags: ['new'] }, must_not: { tags: ['sale'] } }] })).body)).toEqual(['p02', 'p05', 'p08']);
  });

  it('match All requires every value in a multi-valued property', async () => {
    const { body } = await post({ filter: [{ must: { tags: { operator: 'Equal', values: ['sale', 'new'], match: 'All' } } }] });
    expect(ids(body)).toEqual(['p00', 'p03', 'p06', 'p09']);
  });

  it.each([
    ['GreaterThan', ['70'], ['p08', 'p09']],
    ['GreaterThanOrEqual', ['70'], ['p07', 'p08', 'p09']],
    ['LessThan', ['20'], ['p00', 'p01']],
    ['LessThanOrEqual', ['20'], ['p00', 'p01', 'p02']],
    ['Between', ['20', '50'], ['p03', 'p04']],
    ['BetweenInclusive', ['20', '50'], ['p02', 'p03', 'p04', 'p05']],
  ])('operator %s on an Integer property', async (operator, values, expected) => {
    expect(ids((await post({ filter: [{ must: { stock: { operator, values } } }] })).body)).toEqual(expected);
  });

  it('range operators work on Double and DateTime properties', async () => {
    expect(ids((await post({ filter: [{ must: { price: { operator: 'GreaterThan', values: ['28.75'] } } }] })).body)).toEqual(['p08', 'p09']);
    const dates = await post({
      filter: [{ must: { released: { operator: 'BetweenInclusive', values: ['2024-02-15T12:00:00.0000000Z', '2024-03-15T12:00:00.0000000Z'] } } }],
    });
    expect(ids(dates.body)).toEqual(['p01', 'p02']);
  });

  it('range operators on a String or Bool property are refused', async () => {
    const r = await post({ filter: [{ must: { color: { operator: 'GreaterThan', values: ['a'] } } }] });
    expect(r.status).toBe(400);
    expect(r.body.errors!['filter[0].must.color.operator']).toBeDefined();
    expect((await post({ filter: [{ must: { active: { operator: 'LessThan', values: ['true'] } } }] })).status).toBe(400);
  });

  it('Between and BetweenInclusive take exactly two values', async () => {
    const r = await post({ filter: [{ must: { stock: { operator: 'Between', values: ['1'] } } }] });
    expect(r.status).toBe(400);
    expect(r.body.errors!['filter[0].must.stock.values']).toBeDefined();
  });

  it('values are typed by the property: a Double with a comma or a bad Bool is refused', async () => {
    const r = await post({ filter: [{ must: { price: ['12,5'], active: ['yes'] } }] });
    expect(Object.keys(r.body.errors!).sort()).toEqual(['filter[0].must.active.values[0]', 'filter[0].must.price.values[0]']);
  });

  it('the body is held to the published DestinationQueryRequest: members it does not list, and null where it allows none, are 400 by path', async () => {
    const cases: Array<[unknown, string[]]> = [
      [{ period: { since: '2024-05-01T00:00:00.0000000Z', until: 'x' } }, ['period.until']],
      [{ filter: [{ must: { color: { values: ['red'], extra: 1 } } }] }, ['filter[0].must.color.extra']],
      [{ filter: [{ must_not: { color: { operator: null, values: ['red'] } } }] }, ['filter[0].must_not.color.operator']],
      [{ filter: [{ must: { color: { match: null, values: ['red'] } } }] }, ['filter[0].must.color.match']],
      [{ filter: [{ must: { color: 'red' } }] }, ['filter[0].must.color']],
      [{ periodSince: '2024-05-01T00:00:00.0000000Z', nope: 1 }, ['nope', 'periodSince']],
    ];
    for (const [body, paths] of cases) {
      const r = await post(body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(Object.keys(r.body.errors!).sort(), JSON.stringify(body)).toEqual(paths);
    }
  });

  it('an empty search phrase is a phrase like any other (the document allows it): it matches empty values only', async () => {
    const r = await post({ search: [''] });
    expect(r.status).toBe(200);
    expect(r.body.results).toEqual([]);
  });

  it('an unknown operator or match is refused', async () => {
    const r = await post({ filter: [{ must: { stock: { operator: 'Like', values: ['1'], match: 'Some' } } }] });
    expect(Object.keys(r.body.errors!).sort()).toEqual(['filter[0].must.stock.match', 'filter[0].must.stock.operator']);
  });
});

describe('destination query: facets and compression', () => {
  it('facets count values over all matches, limited to size, with the localized header', async () => {
    const en = await get('products?top=1');
    expect(en.body.facets).toEqual([
      {
        propertyId: 'color',
        header: 'Colour',
        values: [
          { count: 4, key: 'red' },
          { count: 3, key: 'blue' },
          { count: 1, key: 'black' },
        ],
      },
      {
        propertyId: 'tags',
        header: 'tags',
        values: [
          { count: 7, key: 'new' },
          { count: 7, key: 'sale' },
        ],
      },
    ]);
    const da = await post({ language: 'da', filter: [{ must: { active: ['true'] } }] });
    expect(da.body.facets![0]).toEqual({
      propertyId: 'color',
      header: 'Farve',
      values: [
        { count: 2, key: 'red' },
        { count: 1, key: 'black' },
        { count: 1, key: 'blue' },
      ],
    });
  });

  it('answers gzip only when Accept-Encoding asks for it', async () => {
    const zipped = await request(`${base}/products`, { headers: { 'accept-encoding': 'gzip' } });
    expect(zipped.headers['content-encoding']).toBe('gzip');
    const body = JSON.parse(gunzipSync(Buffer.from(await zipped.body.arrayBuffer())).toString('utf8')) as Body;
    expect(body.results).toHaveLength(10);
    const plain = await request(`${base}/products`);
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(((await plain.body.json()) as Body).results).toHaveLength(10);
  });
});

describe('destination routes', () => {
  it('an unknown endpoint or destination is a 404 problem', async () => {
    expect((await fetch(`${base}/nope`)).status).toBe(404);
    const res = await fetch(`${h.baseUrl}/acme/not-there/v1/products`);
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
  });

  it('the openapi document lists the property types per endpoint', async () => {
    const res = await fetch(`${base}/openapi`);
    expect(res.status).toBe(200);
    const doc = (await res.json()) as any;
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths)).toEqual(['/products']);
    const props = doc.components.schemas.productsResult.properties;
    expect(Object.fromEntries(Object.entries(props).map(([k, v]: [string, any]) => [k, v['x-property-type']]))).toEqual({
      id: 'String',
      title: 'String',
      color: 'String',
      price: 'Double',
      stock: 'Integer',
      released: 'DateTime',
      tags: 'String',
      active: 'Bool',
    });
    expect(props.tags.type).toBe('array');
  });

  it('seeding rejects a bad body with errors keyed by path', async () => {
    const res = await fetch(`${h.baseUrl}/_emulator/destinations`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ customer: 'a b', destination: 'd', endpoints: [{ name: 'openapi', facets: [{ propertyId: 'x', size: 0 }] }] }),
    });
    expect(res.status).toBe(400);
    expect(Object.keys(((await res.json()) as Body).errors!).sort()).toEqual(['customer', 'endpoints[0].facets[0].size', 'endpoints[0].name', 'sourceId']);
  });
});
