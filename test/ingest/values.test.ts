import { describe, expect, it } from 'vitest';
import { decodeAtRest, isIso8601Timestamp, parseJsonExact, serializeAtRest, stringifyJsonExact, validateTypedIngest } from '../../src/ingest/index.js';

describe('string-at-rest form read back by the current type', () => {
  it('cleared scalars read as null and cleared lists as []', () => {
    expect(decodeAtRest('', 'Integer', null, null)).toEqual({ ok: true, value: null });
    expect(decodeAtRest('', 'Text', null, null)).toEqual({ ok: true, value: null });
    expect(decodeAtRest('', 'List', ',', null)).toEqual({ ok: true, value: [] });
    expect(decodeAtRest('', 'LocalizedList', ',', 'en')).toEqual({ ok: true, value: [] });
  });

  it('an untyped property reads as its raw string', () => {
    expect(decodeAtRest('1,2', null, null, null)).toEqual({ ok: true, value: '1,2' });
  });

  it('each type decodes its own serialisation', () => {
    expect(decodeAtRest(serializeAtRest(['a', 'b'], '|'), 'List', '|', null)).toEqual({ ok: true, value: ['a', 'b'] });
    expect(decodeAtRest(serializeAtRest(true, null), 'Boolean', null, null)).toEqual({ ok: true, value: true });
    expect(decodeAtRest(serializeAtRest(-12, null), 'Integer', null, null)).toEqual({ ok: true, value: -12 });
    expect(decodeAtRest(serializeAtRest(0.1, null), 'Decimal', null, null)).toEqual({ ok: true, value: 0.1 });
    expect(decodeAtRest(serializeAtRest(1e-7, null), 'Decimal', null, null)).toEqual({ ok: true, value: 1e-7 });
    expect(decodeAtRest('2024-05-01T00:00:00Z', 'Timestamp', null, null)).toEqual({ ok: true, value: '2024-05-01T00:00:00Z' });
  });

  it('lists split by the CURRENT delimiter', () => {
    expect(decodeAtRest('a;b,c', 'List', ';', null)).toEqual({ ok: true, value: ['a', 'b,c'] });
  });

  it.each([
    ['1.5', 'Integer'],
    ['9223372036854775808', 'Integer'],
    ['abc', 'Decimal'],
    ['yes', 'Boolean'],
    ['not a date', 'Timestamp'],
  ] as const)('%s is incompatible with %s', (atRest, type) => {
    const decoded = decodeAtRest(atRest, type, null, null);
    expect(decoded.ok).toBe(false);
    if (!decoded.ok) expect(decoded.reason).toMatch(type);
  });

  it('a value stored without language is incompatible with a localized type, and the reverse', () => {
    expect(decodeAtRest('x', 'LocalizedText', null, null).ok).toBe(false);
    expect(decodeAtRest('x', 'Text', null, 'en').ok).toBe(false);
  });
});

describe('ISO 8601 timestamps', () => {
  it.each(['2024-05-01', '2024-05-01T10:20', '2024-05-01T10:20:30', '2024-05-01T10:20:30.123456789Z', '2024-05-01T10:20:30+02:00', '2000-02-29T00:00:00-0530'])(
    'accepts %s',
    (value) => expect(isIso8601Timestamp(value)).toBe(true),
  );
  it.each(['2024-13-01', '2023-02-29', '1900-02-29', '2024-05-01T24:00', '2024-05-01 10:20', '01/05/2024', '2024-05-01T10:20:30+25:00', ''])(
    'rejects %s',
    (value) => expect(isIso8601Timestamp(value)).toBe(false),
  );
});

describe('exact JSON integers', () => {
  it('keeps integer literals beyond 2^53 exact as bigint and leaves the rest alone', () => {
    const parsed = parseJsonExact('{"a":9223372036854775807,"s":"9223372036854775808","d":1.5e300,"n":[-9223372036854775809,12]}');
    expect(parsed).toEqual({ a: 9223372036854775807n, s: '9223372036854775808', d: 1.5e300, n: [-9223372036854775809n, 12] });
  });

  it('writes bigints as exact integer literals, and parses back to the same values', () => {
    const value = { a: 9223372036854775807n, n: [-9223372036854775808n, 12, 'x'] };
    const text = stringifyJsonExact(value);
    expect(text).toBe('{"a":9223372036854775807,"n":[-9223372036854775808,12,"x"]}');
    expect(parseJsonExact(text)).toEqual(value);
    // A stored string that looks like a marker stays a string.
    expect(stringifyJsonExact({ a: 1n, s: '\u0000bigint:5' })).toBe('{"a":1,"s":"\\u0000bigint:5"}');
    expect(stringifyJsonExact({ plain: [1, 'two'] })).toBe('{"plain":[1,"two"]}');
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    expect(() => stringifyJsonExact(circular)).toThrow(/circular/);
  });

  it('an Integer at rest beyond 2^53 reads as an exact bigint; within it, as a number', () => {
    expect(decodeAtRest('9007199254740993', 'Integer', null, null)).toEqual({ ok: true, value: 9007199254740993n });
    expect(decodeAtRest('-9223372036854775808', 'Integer', null, null)).toEqual({ ok: true, value: -9223372036854775808n });
    expect(decodeAtRest('9007199254740991', 'Integer', null, null)).toEqual({ ok: true, value: 9007199254740991 });
  });

  it('numbers inside strings with escaped quotes are not touched', () => {
    expect(parseJsonExact('{"a":"x\\"99999999999999999999"}')).toEqual({ a: 'x"99999999999999999999' });
  });

  it('the 64-bit bounds are exact end to end: max accepted, max + 1 rejected', () => {
    const config = new Map([['n', { type: 'Integer' as const, delimiter: null }]]);
    const max = parseJsonExact('{"entries":[{"id":"e","properties":[{"id":"n","value":9223372036854775807}]}]}');
    const over = parseJsonExact('{"entries":[{"id":"e","properties":[{"id":"n","value":9223372036854775808}]}]}');
    const min = parseJsonExact('{"entries":[{"id":"e","properties":[{"id":"n","value":-9223372036854775808}]}]}');
    const under = parseJsonExact('{"entries":[{"id":"e","properties":[{"id":"n","value":-9223372036854775809}]}]}');
    expect(validateTypedIngest(max, config).ok).toBe(true);
    expect(validateTypedIngest(min, config).ok).toBe(true);
    expect(validateTypedIngest(over, config).ok).toBe(false);
    expect(validateTypedIngest(under, config).ok).toBe(false);
  });

  it('malformed JSON still throws', () => {
    expect(() => parseJsonExact('{"a":99999999999999999999')).toThrow(SyntaxError);
  });
});
