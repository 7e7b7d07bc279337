import { describe, expect, it } from 'vitest';
import { validateTypedIngest, type ConfiguredProperties, type IngestLimits, type IngestPlan } from '../../src/ingest/index.js';
import type { PropertyDataType } from '../../src/types.js';

type Prop = { id: string; value?: unknown; language?: string | null };

function body(...entries: Array<{ id: string; properties: Prop[] }>): unknown {
  return { entries };
}

function config(entries: Record<string, [PropertyDataType | null, string | null]>): ConfiguredProperties {
  return new Map(Object.entries(entries).map(([id, [type, delimiter]]) => [id, { type, delimiter }]));
}

function plan(request: unknown, configured?: ConfiguredProperties, limits?: Partial<IngestLimits>): IngestPlan {
  const result = validateTypedIngest(request, configured, limits);
  if (!result.ok) throw new Error(`expected a valid request, got ${JSON.stringify(result.errors)}`);
  return result.plan;
}

function errors(request: unknown, configured?: ConfiguredProperties, limits?: Partial<IngestLimits>): Record<string, string[]> {
  const result = validateTypedIngest(request, configured, limits);
  if (result.ok) throw new Error('expected validation errors, the request was accepted');
  return result.errors;
}

describe('typed ingest request shape', () => {
  it('entries is required', () => {
    expect(Object.keys(errors({}))).toEqual(['entries']);
  });

  it('entries must be non-empty', () => {
    expect(errors({ entries: [] }).entries?.[0]).toMatch(/at least 1/);
  });

  it('a body that is not an object is rejected at the root', () => {
    expect(Object.keys(errors([1, 2]))).toEqual(['$']);
  });

  it('entry id must be a non-empty string', () => {
    const result = errors(body({ id: '', properties: [] }, { id: 7 as unknown as string, properties: [] }));
    expect(Object.keys(result).sort()).toEqual(['entries[0].id', 'entries[1].id']);
  });

  it('a value must be a string, number, boolean, null or array of strings', () => {
    const result = errors(
      body({
        id: 'e',
        properties: [
          { id: 'p', value: { nested: 1 } },
          { id: 'q', value: [1, 2] },
        ],
      }),
    );
    expect(Object.keys(result)).toEqual(['entries[0].properties[0].value', 'entries[0].properties[1].value']);
    expect(result['entries[0].properties[1].value']?.[0]).toMatch(/array of strings/);
  });

  it('an absent value is an error, not a clear', () => {
    expect(errors(body({ id: 'e', properties: [{ id: 'p' }] }))['entries[0].properties[0].value']?.[0]).toMatch(/required/);
  });

  it('unknown fields are ignored', () => {
    const result = plan({ entries: [{ id: 'e', extra: true, properties: [{ id: 'p', value: 'x', note: 1 }] }], other: 1 });
    expect(result.entries[0]!.properties[0]!.atRest).toBe('x');
  });
});

describe('entry ids', () => {
  it('duplicate entry ids differing only in case are rejected at the later entry', () => {
    const result = errors(body({ id: 'Sku-1', properties: [] }, { id: 'sKU-1', properties: [] }));
    expect(Object.keys(result)).toEqual(['entries[1].id']);
    expect(result['entries[1].id']?.[0]).toMatch(/case-insensitively/);
  });

  it('distinct entry ids are accepted and keep their spelling', () => {
    expect(plan(body({ id: 'Sku-1', properties: [] }, { id: 'Sku-2', properties: [] })).entries.map((e) => e.id)).toEqual(['Sku-1', 'Sku-2']);
  });
});

describe('property ids', () => {
  it('property ids are canonicalised to lowercase', () => {
    const result = plan(body({ id: 'e', properties: [{ id: 'Title', value: 'x' }] }));
    expect(result.entries[0]!.properties[0]!.id).toBe('title');
    expect(result.newPropertiesFound).toEqual([{ id: 'title', type: 'Text' }]);
  });

  it('property ids match the configuration case-insensitively', () => {
    const result = plan(body({ id: 'e', properties: [{ id: 'PRICE', value: 3 }] }), config({ Price: ['Decimal', null] }));
    expect(result.entries[0]!.properties[0]!.type).toBe('Decimal');
    expect(result.newPropertiesFound).toEqual([]);
  });

  it.each(['id', 'ID', 'lastUpdated', 'language', '_id', '_anything', '@meta', '$type'])('reserved property %s is rejected', (id) => {
    const result = errors(body({ id: 'e', properties: [{ id, value: 'x' }] }));
    expect(result['entries[0].properties[0].id']?.[0]).toMatch(/reserved/);
  });

  it('a property id with characters unsafe in paths is rejected', () => {
    expect(Object.keys(errors(body({ id: 'e', properties: [{ id: 'a/b', value: 'x' }] })))).toEqual(['entries[0].properties[0].id']);
  });

  it('a property repeated in an entry without a differing language is rejected', () => {
    const result = errors(
      body({
        id: 'e',
        properties: [
          { id: 'title', value: 'a' },
          { id: 'TITLE', value: 'b' },
        ],
      }),
    );
    expect(Object.keys(result)).toEqual(['entries[0].properties[1].id']);
  });

  it('a localized property repeated with the same language is rejected at the language', () => {
    const result = errors(
      body({
        id: 'e',
        properties: [
          { id: 'name', value: 'a', language: 'en' },
          { id: 'x', value: 1 },
          { id: 'name', value: 'b', language: 'EN' },
        ],
      }),
    );
    expect(Object.keys(result)).toEqual(['entries[0].properties[2].language']);
  });

  it('a localized property may repeat with differing languages', () => {
    const result = plan(
      body({
        id: 'e',
        properties: [
          { id: 'name', value: 'a', language: 'en-gb' },
          { id: 'name', value: 'b', language: 'de' },
        ],
      }),
    );
    expect(result.entries[0]!.properties.map((p) => p.language)).toEqual(['en-GB', 'de']);
    expect(result.newPropertiesFound).toEqual([{ id: 'name', type: 'LocalizedText' }]);
  });

  it('the same property may appear once in each of several entries', () => {
    expect(plan(body({ id: 'a', properties: [{ id: 'p', value: 'x' }] }, { id: 'b', properties: [{ id: 'p', value: 'y' }] })).entries).toHaveLength(2);
  });
});

describe('configured value shapes (spec rule 4)', () => {
  const accepted: Array<[PropertyDataType, unknown, string | undefined, string]> = [
    ['Text', 'hello', undefined, 'hello'],
    ['LocalizedText', 'hallo', 'de', 'hallo'],
    ['List', ['a', 'b'], undefined, 'a,b'],
    ['LocalizedList', ['a', 'b'], 'en', 'a,b'],
    ['Boolean', false, undefined, 'false'],
    ['Timestamp', '2024-02-29T10:20:30.123Z', undefined, '2024-02-29T10:20:30.123Z'],
    ['Timestamp', '2024-05-01', undefined, '2024-05-01'],
    ['Integer', -42, undefined, '-42'],
    ['Decimal', 1.25, undefined, '1.25'],
    ['Decimal', 7, undefined, '7'],
    ['Wildcard', 'anything', undefined, 'anything'],
    ['Wildcard', 12, undefined, '12'],
  ];
  it.each(accepted)('%s accepts %j and stores it as a string', (type, value, language, atRest) => {
    const result = plan(body({ id: 'e', properties: [{ id: 'p', value, language }] }), config({ p: [type, null] }));
    expect(result.entries[0]!.properties[0]).toMatchObject({ type, atRest, cleared: false });
  });

  const rejected: Array<[PropertyDataType, unknown, string | undefined]> = [
    ['Text', 5, undefined],
    ['Text', ['a'], undefined],
    ['LocalizedText', true, 'en'],
    ['List', 'a,b', undefined],
    ['Boolean', 'true', undefined],
    ['Timestamp', 'yesterday', undefined],
    ['Timestamp', '2023-02-29', undefined],
    ['Timestamp', 1714557600, undefined],
    ['Integer', 1.5, undefined],
    ['Integer', '12', undefined],
    ['Decimal', '1.5', undefined],
    ['Decimal', false, undefined],
  ];
  it.each(rejected)('%s rejects %j at the value path', (type, value, language) => {
    const result = errors(body({ id: 'e', properties: [{ id: 'p', value, language }] }), config({ p: [type, null] }));
    expect(Object.keys(result)).toEqual(['entries[0].properties[0].value']);
  });

  it('Integer accepts the 64-bit bounds as parsed and rejects beyond them', () => {
    const min = -(2 ** 63); // exactly -9223372036854775808
    expect(plan(body({ id: 'e', properties: [{ id: 'n', value: min }] }), config({ n: ['Integer', null] })).entries[0]!.properties[0]!.atRest).toBe(
      '-9223372036854775808',
    );
    // 9223372036854775807 written as a JS number is 2^63: out of range as parsed.
    expect(
      errors(body({ id: 'e', properties: [{ id: 'n', value: 2 ** 63 }] }), config({ n: ['Integer', null] }))['entries[0].properties[0].value']?.[0],
    ).toMatch(/64-bit/);
    expect(
      plan(body({ id: 'e', properties: [{ id: 'n', value: 9223372036854775807n }] }), config({ n: ['Integer', null] })).entries[0]!.properties[0]!.atRest,
    ).toBe('9223372036854775807');
    expect(Object.keys(errors(body({ id: 'e', properties: [{ id: 'n', value: 9223372036854775808n }] }), config({ n: ['Integer', null] })))).toEqual([
      'entries[0].properties[0].value',
    ]);
  });

  it('large whole numbers are stored as digits, never exponent notation', () => {
    expect(plan(body({ id: 'e', properties: [{ id: 'n', value: 1e21 }] }), config({ n: ['Decimal', null] })).entries[0]!.properties[0]!.atRest).toBe(
      '1000000000000000000000',
    );
  });
});

describe('language (spec rule 5)', () => {
  it('language on a Text property is rejected', () => {
    const result = errors(body({ id: 'e', properties: [{ id: 'p', value: 'x', language: 'en' }] }), config({ p: ['Text', null] }));
    expect(Object.keys(result)).toEqual(['entries[0].properties[0].language']);
  });

  it('a localized property without language is rejected', () => {
    const result = errors(body({ id: 'e', properties: [{ id: 'p', value: 'x' }] }), config({ p: ['LocalizedText', null] }));
    expect(result['entries[0].properties[0].language']?.[0]).toMatch(/required/);
  });

  it('a malformed language tag is rejected', () => {
    expect(
      Object.keys(errors(body({ id: 'e', properties: [{ id: 'p', value: 'x', language: 'english language' }] }), config({ p: ['LocalizedText', null] }))),
    ).toContain('entries[0].properties[0].language');
  });

  it('a null language counts as absent', () => {
    expect(
      plan(body({ id: 'e', properties: [{ id: 'p', value: 'x', language: null }] }), config({ p: ['Text', null] })).entries[0]!.properties[0]!.language,
    ).toBeNull();
  });
});

describe('null clears (spec rule 6)', () => {
  it('null clears a configured scalar and list by storing an empty value', () => {
    const result = plan(
      body({
        id: 'e',
        properties: [
          { id: 'n', value: null },
          { id: 'tags', value: null },
          { id: 'name', value: null, language: 'en' },
        ],
      }),
      config({ n: ['Integer', null], tags: ['List', ';'], name: ['LocalizedText', null] }),
    );
    expect(result.entries[0]!.properties.map((p) => [p.atRest, p.cleared])).toEqual([
      ['', true],
      ['', true],
      ['', true],
    ]);
  });

  it('null next to values of an unconfigured property clears and does not block inference', () => {
    const result = plan(body({ id: 'a', properties: [{ id: 'p', value: null }] }, { id: 'b', properties: [{ id: 'p', value: true }] }));
    expect(result.newPropertiesFound).toEqual([{ id: 'p', type: 'Boolean' }]);
    expect(result.entries[0]!.properties[0]!.cleared).toBe(true);
  });

  it('a property with only null values cannot be inferred', () => {
    const result = errors(body({ id: 'a', properties: [{ id: 'p', value: null }] }, { id: 'b', properties: [{ id: 'p', value: null }] }));
    expect(Object.keys(result)).toEqual(['entries[0].properties[0].value', 'entries[1].properties[0].value']);
    expect(result['entries[0].properties[0].value']?.[0]).toMatch(/cannot be inferred/);
  });

  it('a property configured without a type is inferred like a new one', () => {
    expect(plan(body({ id: 'a', properties: [{ id: 'p', value: 'x' }] }), config({ p: [null, null] })).newPropertiesFound).toEqual([{ id: 'p', type: 'Text' }]);
  });
});

describe('inference (spec rule 7)', () => {
  const cases: Array<[string, Prop[], { id: string; type: PropertyDataType; delimiter?: string }]> = [
    ['strings become Text', [{ id: 'p', value: 'a' }], { id: 'p', type: 'Text' }],
    ['strings with language become LocalizedText', [{ id: 'p', value: 'a', language: 'en' }], { id: 'p', type: 'LocalizedText' }],
    ['string arrays become List with ,', [{ id: 'p', value: ['a'] }], { id: 'p', type: 'List', delimiter: ',' }],
    ['string arrays with language become LocalizedList', [{ id: 'p', value: ['a'], language: 'en' }], { id: 'p', type: 'LocalizedList', delimiter: ',' }],
    ['booleans become Boolean', [{ id: 'p', value: true }], { id: 'p', type: 'Boolean' }],
    ['whole numbers become Integer', [{ id: 'p', value: 3 }], { id: 'p', type: 'Integer' }],
    ['fractional numbers become Decimal', [{ id: 'p', value: 3.5 }], { id: 'p', type: 'Decimal' }],
    ['a string that looks like a timestamp is never inferred as Timestamp', [{ id: 'p', value: '2024-05-01T10:00:00Z' }], { id: 'p', type: 'Text' }],
  ];
  it.each(cases)('%s', (_name, properties, expected) => {
    expect(plan(body({ id: 'e', properties })).newPropertiesFound).toEqual([expected]);
  });

  it('Integer and Decimal values of one property in a request are promoted to Decimal', () => {
    const result = plan(body({ id: 'a', properties: [{ id: 'price', value: 3 }] }, { id: 'b', properties: [{ id: 'price', value: 3.25 }] }));
    expect(result.newPropertiesFound).toEqual([{ id: 'price', type: 'Decimal' }]);
    expect(result.entries.map((e) => e.properties[0]!.type)).toEqual(['Decimal', 'Decimal']);
  });

  it('incompatible shapes of one property reject the whole request', () => {
    const result = errors(
      body(
        {
          id: 'a',
          properties: [
            { id: 'p', value: 'x' },
            { id: 'ok', value: 1 },
          ],
        },
        { id: 'b', properties: [{ id: 'p', value: true }] },
      ),
    );
    expect(Object.keys(result)).toEqual(['entries[1].properties[0].value']);
    expect(result['entries[1].properties[0].value']?.[0]).toMatch(/incompatible value shapes/);
  });

  it('inference uses values of the property across every entry, in any case', () => {
    const result = errors(body({ id: 'a', properties: [{ id: 'P', value: 1 }] }, { id: 'b', properties: [{ id: 'p', value: ['x'] }] }));
    expect(Object.keys(result)).toEqual(['entries[1].properties[0].value']);
  });

  it('mixing localized and non-localized strings of a new property is rejected', () => {
    const result = errors(body({ id: 'a', properties: [{ id: 'p', value: 'x', language: 'en' }] }, { id: 'b', properties: [{ id: 'p', value: 'y' }] }));
    expect(Object.keys(result)).toEqual(['entries[1].properties[0].language']);
  });

  it('language on an inferred number is rejected', () => {
    expect(Object.keys(errors(body({ id: 'a', properties: [{ id: 'p', value: 1, language: 'en' }] })))).toEqual(['entries[0].properties[0].language']);
  });

  it('newPropertiesFound is empty when every property is configured', () => {
    expect(plan(body({ id: 'a', properties: [{ id: 'p', value: 'x' }] }), config({ p: ['Text', null] })).newPropertiesFound).toEqual([]);
  });
});

describe('delimiters (spec rule 8)', () => {
  it('a list element containing the delimiter is rejected', () => {
    const result = errors(body({ id: 'e', properties: [{ id: 'tags', value: ['a', 'b,c'] }] }));
    expect(result['entries[0].properties[0].value']?.[0]).toMatch(/element 1 contains the delimiter ','/);
  });

  it('an existing list property keeps its configured delimiter', () => {
    const result = plan(body({ id: 'e', properties: [{ id: 'tags', value: ['a,1', 'b'] }] }), config({ tags: ['List', '|'] }));
    expect(result.entries[0]!.properties[0]).toMatchObject({ atRest: 'a,1|b', delimiter: '|' });
    expect(Object.keys(errors(body({ id: 'e', properties: [{ id: 'tags', value: ['a|1'] }] }), config({ tags: ['List', '|'] })))).toEqual([
      'entries[0].properties[0].value',
    ]);
  });

  it('an untyped property keeps its delimiter when inferred as a list', () => {
    expect(plan(body({ id: 'e', properties: [{ id: 'tags', value: ['a'] }] }), config({ tags: [null, ';'] })).newPropertiesFound).toEqual([
      { id: 'tags', type: 'List', delimiter: ';' },
    ]);
  });

  it('a list property without a delimiter uses ,', () => {
    expect(plan(body({ id: 'e', properties: [{ id: 'tags', value: ['a', 'b'] }] }), config({ tags: ['List', null] })).entries[0]!.properties[0]!.atRest).toBe(
      'a,b',
    );
  });

  it('an empty list element is rejected (it cannot be stored)', () => {
    expect(Object.keys(errors(body({ id: 'e', properties: [{ id: 'tags', value: ['a', ''] }] })))).toEqual(['entries[0].properties[0].value']);
  });
});

describe('ceilings', () => {
  it('an entry above maxEntrySizeBytes is reported with the ceiling', () => {
    const result = errors(body({ id: 'e', properties: [{ id: 'p', value: 'x'.repeat(200) }] }), undefined, { maxEntrySizeBytes: 100 });
    expect(result['entries[0]']?.[0]).toMatch(/ceiling of 100 bytes \(maxEntrySizeBytes\)/);
  });

  it('a value above maxPropertyValueBytes is reported with the ceiling, counting UTF-8 bytes', () => {
    const result = errors(body({ id: 'e', properties: [{ id: 'p', value: 'é'.repeat(6) }] }), undefined, { maxPropertyValueBytes: 10 });
    expect(result['entries[0].properties[0].value']?.[0]).toMatch(/12 bytes, above the ceiling of 10 bytes/);
  });

  it('a request above maxRequestBytes is reported with the ceiling', () => {
    const result = errors(body({ id: 'e', properties: [{ id: 'p', value: 'x'.repeat(100) }] }), undefined, { maxRequestBytes: 50 });
    expect(result.$?.[0]).toMatch(/ceiling of 50 bytes \(maxRequestBytes\)/);
  });

  it('the caller-measured request size is used when given', () => {
    const result = validateTypedIngest(body({ id: 'e', properties: [] }), new Map(), { maxRequestBytes: 1000 }, { requestBytes: 1001 });
    expect(result.ok).toBe(false);
  });

  it('requests within the default ceilings pass', () => {
    expect(plan(body({ id: 'e', properties: [{ id: 'p', value: 'x'.repeat(10_000) }] })).requestBytes).toBeGreaterThan(10_000);
  });
});

describe('all-or-nothing (spec rule 3)', () => {
  it('one bad value among many valid entries rejects the request without a plan', () => {
    const entries = Array.from({ length: 50 }, (_, i) => ({ id: `e${i}`, properties: [{ id: 'n', value: i }] }));
    entries[37]!.properties[0]!.value = 1.5;
    const result = validateTypedIngest({ entries }, config({ n: ['Integer', null] }));
    expect(result).toEqual({ ok: false, errors: { 'entries[37].properties[0].value': [expect.stringMatching(/whole number/)] } });
  });

  it('every error of the request is reported at once', () => {
    const result = errors(
      body({ id: 'a', properties: [{ id: 'id', value: 'x' }] }, { id: 'A', properties: [{ id: 'p', value: 'x', language: 'en' }] }),
      config({ p: ['Text', null] }),
    );
    expect(Object.keys(result).sort()).toEqual(['entries[0].properties[0].id', 'entries[1].id', 'entries[1].properties[0].language']);
  });
});
