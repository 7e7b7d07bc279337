import type { ReadValue } from '../../../ingest/index.js';
import type { PropertyDataType } from '../../../types.js';

/**
 * Value types of the destination query API (spec: Filtering rule 4): String, Datetime, Integer,
 * Double, Bool. A source property maps onto one of them by its configured data type.
 */
export type QueryValueType = 'String' | 'DateTime' | 'Integer' | 'Double' | 'Bool';

export function queryTypeOf(type: PropertyDataType | null): QueryValueType {
  switch (type) {
    case 'Timestamp':
      return 'DateTime';
    case 'Integer':
      return 'Integer';
    case 'Decimal':
      return 'Double';
    case 'Boolean':
      return 'Bool';
    default:
      return 'String';
  }
}

export function isRangeType(type: QueryValueType): boolean {
  return type === 'DateTime' || type === 'Integer' || type === 'Double';
}

/**
 * Spec datetime format `yyyy-MM-dd'T'HH:mm:ss.SSSSSSSZ`. We also accept 0..7 fraction digits and
 * `Z`, `+HH:MM` or `+HHMM` (or nothing, read as UTC), since clients rarely send exactly seven digits.
 */
const DATETIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,7}))?(Z|[+-]\d{2}:?\d{2})?$/;

/**
 * Normalizes a datetime to a sortable UTC string with seven fraction digits
 * (`2024-01-02T03:04:05.1234567Z`), so comparison is plain string order at 100 ns precision.
 * Returns undefined for anything not in the format.
 */
export function normalizeDateTime(raw: string): string | undefined {
  const m = DATETIME.exec(raw);
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s, frac = '', zone = 'Z'] = m;
  const fields = [y, mo, d, h, mi, s].map(Number) as [number, number, number, number, number, number];
  const [year, month, day, hour, minute, second] = fields;
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 59) return undefined;
  let offsetMinutes = 0;
  if (zone !== 'Z') {
    const sign = zone.startsWith('-') ? -1 : 1;
    const digits = zone.slice(1).replace(':', '');
    offsetMinutes = sign * (Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2)));
  }
  const ms = Date.UTC(year, month - 1, day, hour, minute, second) - offsetMinutes * 60_000;
  // Rejects days past the month's end (Date.UTC would roll 2024-02-30 over into March).
  if (new Date(Date.UTC(year, month - 1, day)).getUTCDate() !== day) return undefined;
  const date = new Date(ms);
  return `${date.toISOString().slice(0, 19)}.${frac.padEnd(7, '0')}Z`;
}

/** Entry timestamps come in the read shape (ISO 8601); anything Date can read is accepted there. */
export function normalizeStoredDateTime(raw: string): string | undefined {
  const strict = normalizeDateTime(raw);
  if (strict) return strict;
  const ms = Date.parse(raw);
  return Number.isNaN(ms) ? undefined : `${new Date(ms).toISOString().slice(0, 23)}0000Z`;
}

/** A value ready for comparison: numbers for Integer/Double, 0/1 for Bool, normalized strings otherwise. */
export type Comparable = string | number;

/** Parses a criteria or `after` value given by the caller (string, or a JSON scalar in POST bodies). */
export function parseQueryValue(raw: unknown, type: QueryValueType): Comparable | { error: string } {
  const text = typeof raw === 'string' ? raw : typeof raw === 'number' || typeof raw === 'boolean' ? String(raw) : undefined;
  if (text === undefined) return { error: 'Values must be strings, numbers or booleans.' };
  switch (type) {
    case 'String':
      return text;
    case 'Integer':
      return /^[+-]?\d+$/.test(text) ? Number(text) : { error: `'${text}' is not an Integer.` };
    case 'Double':
      // Spec: Double uses `.` as decimal separator.
      return /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/.test(text) ? Number(text) : { error: `'${text}' is not a Double (use '.' as decimal separator).` };
    case 'Bool':
      return text === 'true' ? 1 : text === 'false' ? 0 : { error: `'${text}' is not a Bool (true or false).` };
    case 'DateTime':
      return normalizeDateTime(text) ?? { error: `'${text}' is not a datetime (yyyy-MM-dd'T'HH:mm:ss.SSSSSSSZ).` };
  }
}

/** The comparable elements of a stored value (a list property gives one per element). */
export function comparablesOf(value: ReadValue | undefined, type: QueryValueType): Comparable[] {
  if (value === null || value === undefined) return [];
  const items = Array.isArray(value) ? value : [value];
  const out: Comparable[] = [];
  for (const item of items) {
    if (type === 'DateTime') {
      const n = typeof item === 'string' ? normalizeStoredDateTime(item) : undefined;
      if (n) out.push(n);
    } else if (type === 'Integer' || type === 'Double') {
      const n = typeof item === 'number' ? item : Number(item);
      if (Number.isFinite(n)) out.push(n);
    } else if (type === 'Bool') {
      out.push(item === true || item === 'true' ? 1 : 0);
    } else {
      out.push(String(item));
    }
  }
  return out;
}

export function compareComparable(a: Comparable, b: Comparable): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  const sa = String(a);
  const sb = String(b);
  return sa < sb ? -1 : sa > sb ? 1 : 0;
}
