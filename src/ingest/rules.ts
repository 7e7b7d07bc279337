import type { PropertyDataType } from '../types.js';

/**
 * Constants and canonical forms of typed source ingest (spec: "Typed source ingest", rules 1-11),
 * shared by the emulator and the client. Pure code: no I/O.
 */

/** Every property data type of the spec (the enumeration, without null). */
export const PROPERTY_DATA_TYPES: readonly PropertyDataType[] = [
  'Text',
  'LocalizedText',
  'List',
  'LocalizedList',
  'Boolean',
  'Timestamp',
  'Integer',
  'Decimal',
  'Wildcard',
];

export function isPropertyDataType(value: unknown): value is PropertyDataType {
  return typeof value === 'string' && (PROPERTY_DATA_TYPES as readonly string[]).includes(value);
}

/** Spec rule 5: `language` is required for these types and rejected for every other one. */
export function isLocalizedType(type: PropertyDataType): boolean {
  return type === 'LocalizedText' || type === 'LocalizedList';
}

/** Types whose value is an array of strings joined by the delimiter at rest (spec rule 8). */
export function isListType(type: PropertyDataType): boolean {
  return type === 'List' || type === 'LocalizedList';
}

/** Spec rule 8: new list properties use `,`; so do string arrays of a property without a delimiter. */
export const DEFAULT_LIST_DELIMITER = ',';

/**
 * Reserved system property IDs (spec: "reserved system property IDs are rejected"; the list is not
 * shown). We reserve the fields of the entry read shape that live beside the properties (`id`,
 * `lastupdated`) and the per-item `language`, plus every ID starting with `_`, `@` or `$`: system
 * fields of destinations (`@meta`, `@timestamp`...) and of storage (`_id`) use those prefixes.
 * Compared after lowercasing (spec rule 9).
 */
export const RESERVED_PROPERTY_IDS: readonly string[] = ['id', 'lastupdated', 'language'];
export const RESERVED_PROPERTY_PREFIXES: readonly string[] = ['_', '@', '$'];

export function isReservedPropertyId(canonicalId: string): boolean {
  return RESERVED_PROPERTY_IDS.includes(canonicalId) || RESERVED_PROPERTY_PREFIXES.some((prefix) => canonicalId.startsWith(prefix));
}

/** Longest property ID we accept; the spec shows none, IDs also travel in URL paths (PUT). */
export const MAX_PROPERTY_ID_LENGTH = 128;
/** Letters and digits, then also `_ . : -`: safe in URL paths and destination filters. */
const PROPERTY_ID_PATTERN = /^[\p{L}\p{N}][\p{L}\p{N}_.:-]*$/u;

/** `id` -> `[Ii][Dd]`: a case-insensitive word in a pattern without flags. */
const caseless = (word: string): string => [...word].map((c) => `[${c.toUpperCase()}${c}]`).join('');

/**
 * The whole rule of {@link propertyIdProblem} as one JSON Schema pattern (ECMA-262, Unicode), for
 * the published description: the reserved IDs in any case are excluded, the reserved prefixes by
 * the first character. With `maxLength` {@link MAX_PROPERTY_ID_LENGTH} (code points, as JSON Schema counts).
 */
export const PROPERTY_ID_JSON_PATTERN = `^(?!(?:${RESERVED_PROPERTY_IDS.map(caseless).join('|')})$)${PROPERTY_ID_PATTERN.source.slice(1)}`;

/** Spec rule 9: property IDs match case-insensitively and are stored in lowercase. */
export function canonicalPropertyId(id: string): string {
  return id.toLowerCase();
}

/**
 * Why a property ID (any case) is not acceptable, or undefined when it is. The shape and the length
 * are those of the ID as sent (the length in code points, as JSON Schema's `maxLength` counts), so
 * the published pattern says the same; reserved IDs are compared in lowercase.
 */
export function propertyIdProblem(id: string): string | undefined {
  const canonical = canonicalPropertyId(id);
  if (id.length === 0) return 'property id must be a non-empty string';
  if (isReservedPropertyId(canonical)) {
    return `property id '${id}' is reserved for the system (reserved: ${RESERVED_PROPERTY_IDS.join(', ')} and ids starting with ${RESERVED_PROPERTY_PREFIXES.join(' ')})`;
  }
  if ([...id].length > MAX_PROPERTY_ID_LENGTH) return `property id must be at most ${MAX_PROPERTY_ID_LENGTH} characters`;
  if (!PROPERTY_ID_PATTERN.test(id)) {
    return `property id '${id}' must start with a letter or digit and hold only letters, digits, '_', '.', ':' or '-'`;
  }
  return undefined;
}

/** Longest entry ID we accept (not shown in the spec; entry IDs travel in URL paths). */
export const MAX_ENTRY_ID_LENGTH = 512;

/** Spec: entry IDs are unique within a request "compared case-insensitively"; at rest they key entries the same way. */
export function entryKey(id: string): string {
  return id.toLowerCase();
}

/** BCP 47-shaped tag: a 2-8 letter primary subtag, then subtags of 1-8 letters or digits. */
export const LANGUAGE_PATTERN = /^[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*$/;

export function languageProblem(language: string): string | undefined {
  return LANGUAGE_PATTERN.test(language) ? undefined : `language '${language}' is not a BCP 47 language tag (e.g. en, en-GB)`;
}

/**
 * BCP 47 tags are case-insensitive; we store the conventional casing (`en`, `en-GB`, `zh-Hant`) so
 * one translation has one key: primary subtag lowercase, 2-letter regions uppercase, 4-letter
 * scripts titlecase, anything else lowercase.
 */
export function canonicalLanguage(language: string): string {
  return language
    .split('-')
    .map((subtag, index) => {
      if (index === 0) return subtag.toLowerCase();
      if (subtag.length === 2 && /^[A-Za-z]+$/.test(subtag)) return subtag.toUpperCase();
      if (subtag.length === 4 && /^[A-Za-z]+$/.test(subtag)) return subtag[0]!.toUpperCase() + subtag.slice(1).toLowerCase();
      return subtag.toLowerCase();
    })
    .join('-');
}

/** Spec, Limits: "Integer property value: 64-bit integer range". */
export const INT64_MIN = -(2n ** 63n);
export const INT64_MAX = 2n ** 63n - 1n;

/** Longest delimiter we accept for a list property (not shown in the spec). */
export const MAX_DELIMITER_LENGTH = 8;

export function delimiterProblem(delimiter: string): string | undefined {
  if (delimiter.length === 0) return 'delimiter must be a non-empty string';
  if ([...delimiter].length > MAX_DELIMITER_LENGTH) return `delimiter must be at most ${MAX_DELIMITER_LENGTH} characters`;
  return undefined;
}
