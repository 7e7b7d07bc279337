import * as z from 'zod';
import { issuesToErrors } from '../http/validation.js';
import { component } from '../openapi/components.js';

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

const entrySchema = z.object(
  {
    // Non-empty, like typed ingest's entry IDs; the published description says the same (minLength).
    id: z.string({ error: 'id is required.' }).min(1, 'id is required.'),
    properties: z
      .record(z.string().meta({ minLength: 1 }), z.string({ error: 'Legacy import values are strings (or null to clear).' }).nullable(), {
        error: 'properties must be an object mapping property IDs to string values.',
      })
      .optional()
      .meta({ description: 'Property ID -> the value at rest; null clears it. IDs compare case-insensitively and are stored in lowercase.' }),
  },
  { error: 'An entry must be an object { id, properties }.' },
);

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Entry IDs and property IDs are unique case-insensitively (like typed ingest). Runs over the raw
 * entries also when some are malformed, so every problem of a request is reported at once.
 */
function checkUniqueness(entries: readonly unknown[], issues: z.core.$RefinementCtx): void {
  const seen = new Map<string, number>();
  entries.forEach((entry, i) => {
    if (!isRecord(entry)) return;
    const key = typeof entry.id === 'string' && entry.id !== '' ? entry.id.toLowerCase() : undefined;
    const first = key === undefined ? undefined : seen.get(key);
    if (first !== undefined)
      issues.addIssue({ code: 'custom', path: ['entries', i, 'id'], message: `Duplicate of entries[${first}].id (IDs compare case-insensitively).` });
    else if (key !== undefined) seen.set(key, i);
    const ids = new Set<string>();
    for (const pid of Object.keys(isRecord(entry.properties) ? entry.properties : {})) {
      if (pid === '') issues.addIssue({ code: 'custom', path: ['entries', i, 'properties'], message: 'Property IDs must not be empty.' });
      else if (ids.has(pid.toLowerCase())) {
        issues.addIssue({
          code: 'custom',
          path: ['entries', i, 'properties', pid],
          message: 'Property IDs compare case-insensitively: this one is given twice.',
        });
      }
      ids.add(pid.toLowerCase());
    }
  });
}

export const LegacyImportRequestSchema = component(
  'LegacyImportRequest',
  z
    .object(
      { entries: z.array(entrySchema, { error: 'entries must be a non-empty array.' }).min(1, 'entries must be a non-empty array.') },
      { error: 'The body must be an object { entries: [...] }.' },
    )
    .superRefine((body, issues) => checkUniqueness(body.entries, issues), {
      when: (payload) => isRecord(payload.value) && Array.isArray(payload.value.entries),
    })
    .meta({ description: "Not shown by the spec: the emulator's choice, string values at rest (docs/client.md)." }),
);

/** Validates the whole request (all-or-nothing, like typed ingest); messages keyed by request path. */
export function validateLegacyImport(body: unknown): { request?: LegacyImportRequest; errors?: Record<string, string[]> } {
  const parsed = LegacyImportRequestSchema.safeParse(body);
  if (!parsed.success) return { errors: issuesToErrors(parsed.error.issues) };
  const entries = parsed.data.entries.map((entry) => ({
    id: entry.id,
    properties: Object.fromEntries(Object.entries(entry.properties ?? {}).map(([pid, value]) => [pid.toLowerCase(), value])),
  }));
  return { request: { entries } };
}
