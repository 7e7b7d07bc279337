import type { PropertyDataType, PropertyValue } from '../types.js';
import { DEFAULT_LIST_DELIMITER, INT64_MAX, INT64_MIN, isListType, isLocalizedType } from './rules.js';
import { isIso8601Timestamp } from './timestamp.js';
import type { IngestValue } from './types.js';

/**
 * Value shapes per property type (spec rule 4), the string-at-rest form (spec rule 2) and its way
 * back to a typed read value (spec, Read source entries: "values use the current source-property
 * types and delimiters").
 */

/** The JSON shape of a value, as type inference sees it (spec rule 7). */
export type ValueKind = 'string' | 'list' | 'boolean' | 'integer' | 'decimal' | 'null';

export function valueKind(value: IngestValue): ValueKind {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'list';
  if (typeof value === 'boolean') return 'boolean';
  if (typeof value === 'bigint') return 'integer';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'decimal';
  return 'string';
}

/**
 * Spec, Limits: Integer is the 64-bit range. JSON numbers reach us as IEEE doubles, so the check is
 * exact on the value as parsed: 9223372036854775807 written in JSON parses to 2^63 and is rejected
 * unless the parser kept it exact (the emulator parses big integer literals exactly, see
 * exact-json.ts, and then accepts it). Whole numbers beyond 2^53 that are in range are accepted;
 * their digits at rest are those of the parsed value.
 */
export function isInt64(value: number | bigint): boolean {
  if (typeof value === 'number') {
    if (!Number.isInteger(value)) return false;
    if (Number.isSafeInteger(value)) return true;
  }
  const big = BigInt(value);
  return big >= INT64_MIN && big <= INT64_MAX;
}

const EXPECTED: Record<PropertyDataType, string> = {
  Text: 'a string',
  LocalizedText: 'a string',
  List: 'an array of strings',
  LocalizedList: 'an array of strings',
  Boolean: 'a boolean',
  Timestamp: 'an ISO 8601 timestamp string (e.g. 2024-05-01T10:20:30Z)',
  Integer: `a whole number within the 64-bit integer range (${INT64_MIN}..${INT64_MAX})`,
  Decimal: 'a finite number',
  Wildcard: 'a string, number, boolean or array of strings',
};

/** The delimiter a list value is joined with: the configured one, else `,` (spec rule 8). */
export function listDelimiter(delimiter: string | null): string {
  return delimiter === null || delimiter.length === 0 ? DEFAULT_LIST_DELIMITER : delimiter;
}

/** Why `value` does not fit `type` (spec rule 4), or undefined. `null` always fits: it clears (rule 6). */
export function valueProblem(value: IngestValue, type: PropertyDataType, delimiter: string | null): string | undefined {
  if (value === null) return undefined;
  const kind = valueKind(value);
  // Built only on failure: this runs once per value of every request.
  const mismatch = () => `${type} property requires ${EXPECTED[type]} (got ${describeKind(value)})`;
  switch (type) {
    case 'Text':
    case 'LocalizedText':
      return kind === 'string' ? undefined : mismatch();
    case 'Timestamp':
      if (kind !== 'string') return mismatch();
      return isIso8601Timestamp(value as string) ? undefined : `${type} property requires ${EXPECTED[type]} (got '${String(value)}')`;
    case 'Boolean':
      return kind === 'boolean' ? undefined : mismatch();
    case 'Integer':
      if (kind === 'integer' && isInt64(value as number | bigint)) return undefined;
      return kind === 'integer' ? `${type} value ${String(value)} is outside the 64-bit integer range` : mismatch();
    case 'Decimal':
      return kind === 'integer' || kind === 'decimal' ? undefined : mismatch();
    case 'List':
    case 'LocalizedList':
      return kind === 'list' ? listElementsProblem(value as string[], listDelimiter(delimiter)) : mismatch();
    case 'Wildcard':
      return kind === 'list' ? listElementsProblem(value as string[], listDelimiter(delimiter)) : undefined;
  }
}

/**
 * Spec rule 8: list elements cannot contain the delimiter. We also refuse empty elements: at rest
 * `['']` and `[]` are the same empty string, so the element would be lost.
 */
function listElementsProblem(elements: readonly string[], delimiter: string): string | undefined {
  for (let index = 0; index < elements.length; index++) {
    const element = elements[index]!;
    if (element.includes(delimiter)) return `list element ${index} contains the delimiter '${delimiter}'`;
    if (element.length === 0) return `list element ${index} is empty (an empty element cannot be stored)`;
  }
  return undefined;
}

function describeKind(value: IngestValue): string {
  const kind = valueKind(value);
  return kind === 'list' ? 'an array' : kind === 'integer' || kind === 'decimal' ? 'a number' : `a ${kind}`;
}

/** Spec rule 2: the string-at-rest form of a value that passed `valueProblem`; null (clear) is `''` (rule 6). */
export function serializeAtRest(value: IngestValue, delimiter: string | null): string {
  if (value === null) return '';
  if (Array.isArray(value)) return value.join(listDelimiter(delimiter));
  if (typeof value === 'bigint') return value.toString();
  // Whole numbers through BigInt so 1e21 stays digits, never exponent notation.
  if (typeof value === 'number') return Number.isSafeInteger(value) || !Number.isInteger(value) ? String(value) : BigInt(value).toString();
  return typeof value === 'boolean' ? String(value) : value;
}

/** A value as reads show it: an Integer beyond 2^53 is a `bigint`, written exactly by stringifyJsonExact. */
export type ReadValue = PropertyValue | bigint;

export type DecodedValue = { ok: true; value: ReadValue } | { ok: false; reason: string };

const INTEGER_AT_REST = /^-?\d+$/;
const DECIMAL_AT_REST = /^-?\d+(\.\d+)?([eE][+-]?\d+)?$/;

/**
 * A stored string typed by the current configuration (spec, Read source entries). Cleared scalars
 * read as null, cleared lists as `[]`, untyped properties as their raw string. A stored value that
 * the current type cannot represent (after a type change) is incompatible: reads answer 409.
 */
export function decodeAtRest(atRest: string, type: PropertyDataType | null, delimiter: string | null, language: string | null): DecodedValue {
  if (type === null) return { ok: true, value: atRest };
  if (isLocalizedType(type) && language === null) return incompatible(type, 'it was stored without a language');
  if (!isLocalizedType(type) && language !== null) return incompatible(type, `it was stored for language ${language}`);
  if (isListType(type)) return { ok: true, value: atRest === '' ? [] : atRest.split(listDelimiter(delimiter)) };
  if (atRest === '') return { ok: true, value: null };
  switch (type) {
    case 'List':
    case 'LocalizedList': // handled above; listed so the switch stays exhaustive
    case 'Text':
    case 'LocalizedText':
    case 'Wildcard':
      return { ok: true, value: atRest };
    case 'Timestamp':
      return isIso8601Timestamp(atRest) ? { ok: true, value: atRest } : incompatible(type, `'${atRest}' is not an ISO 8601 timestamp`);
    case 'Boolean':
      return atRest === 'true' || atRest === 'false' ? { ok: true, value: atRest === 'true' } : incompatible(type, `'${atRest}' is not a boolean`);
    case 'Integer':
      if (!INTEGER_AT_REST.test(atRest) || !isInt64(BigInt(atRest))) return incompatible(type, `'${atRest}' is not a 64-bit integer`);
      // Exact: a Number would round 2^53 + 1 and up to the nearest double.
      return { ok: true, value: Number.isSafeInteger(Number(atRest)) ? Number(atRest) : BigInt(atRest) };
    case 'Decimal':
      return DECIMAL_AT_REST.test(atRest) && Number.isFinite(Number(atRest))
        ? { ok: true, value: Number(atRest) }
        : incompatible(type, `'${atRest}' is not a finite number`);
  }
}

function incompatible(type: PropertyDataType, why: string): DecodedValue {
  return { ok: false, reason: `stored value is incompatible with type ${type}: ${why}` };
}
