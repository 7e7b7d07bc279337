import { ErrorBag, isPlainObject } from '../tags/seeding.js';

/**
 * The legacy import body. The spec does not show the shapes of verify and import; we chose the
 * shape of a string-typed legacy feed: `{ entries: [{ id, properties: { <propertyId>: <string | null> } }] }`.
 * Values are strings (the source's string-at-rest form); `null` clears a property. Property IDs
 * are canonicalized to lowercase like typed ingest (spec: typed ingest rule 9).
 */
export interface LegacyImportEntry {
  id: string;
  properties: Record<string, string | null>;
}

export interface LegacyImportRequest {
  entries: LegacyImportEntry[];
}

/** Validates the whole request (all-or-nothing, like typed ingest); messages keyed by request path. */
export function validateLegacyImport(body: unknown): { request?: LegacyImportRequest; errors?: Record<string, string[]> } {
  const bag = new ErrorBag();
  if (!isPlainObject(body)) return { errors: { $: ['The body must be an object { entries: [...] }.'] } };
  if (!Array.isArray(body.entries) || body.entries.length === 0) {
    bag.add('entries', 'entries must be a non-empty array.');
    return { errors: bag.errors };
  }
  const seen = new Map<string, number>();
  const entries: LegacyImportEntry[] = [];
  body.entries.forEach((raw, i) => {
    const at = `entries[${i}]`;
    if (!isPlainObject(raw)) return bag.add(at, 'An entry must be an object { id, properties }.');
    if (typeof raw.id !== 'string' || raw.id.trim() === '') bag.add(`${at}.id`, 'id is required.');
    else {
      const key = raw.id.toLowerCase();
      const first = seen.get(key);
      if (first !== undefined) bag.add(`${at}.id`, `Duplicate of entries[${first}].id (IDs compare case-insensitively).`);
      else seen.set(key, i);
    }
    const properties: Record<string, string | null> = {};
    if (raw.properties !== undefined && !isPlainObject(raw.properties)) {
      bag.add(`${at}.properties`, 'properties must be an object mapping property IDs to string values.');
    } else {
      for (const [pid, value] of Object.entries(raw.properties ?? {})) {
        const lower = pid.toLowerCase();
        if (pid.trim() === '') bag.add(`${at}.properties`, 'Property IDs must not be empty.');
        else if (lower in properties) bag.add(`${at}.properties.${pid}`, 'Property IDs compare case-insensitively: this one is given twice.');
        if (value !== null && typeof value !== 'string') bag.add(`${at}.properties.${pid}`, 'Legacy import values are strings (or null to clear).');
        else properties[lower] = value;
      }
    }
    if (typeof raw.id === 'string') entries.push({ id: raw.id, properties });
  });
  return bag.empty ? { request: { entries } } : { errors: bag.errors };
}
