import { z } from 'zod';
import { LANGUAGE_PATTERN, MAX_ENTRY_ID_LENGTH, MAX_PROPERTY_ID_LENGTH, PROPERTY_ID_JSON_PATTERN } from './rules.js';
import type { IngestErrors } from './types.js';

/**
 * The structural shape of the typed ingest request (spec: "Typed ingest request"). Rules that need
 * the whole request or the property configuration (uniqueness, types, inference, ceilings) live in
 * validate.ts. Unknown fields are ignored, as a JSON API usually does. The shapes validate.ts checks
 * with its own messages (property ID, language, entry ID length) are stated here as metadata for the
 * published description, from the same constants.
 */

const VALUE_SHAPE = 'value must be a string, a finite number, a boolean, null or an array of strings';

export const ingestValueSchema = z.union(
  [z.string(), z.number(), z.bigint(), z.boolean(), z.null(), z.array(z.string({ error: 'list elements must be strings' }))],
  { error: VALUE_SHAPE },
);

/** What `propertyIdProblem` (rules.ts) accepts, as JSON Schema keywords (for the published descriptions). */
export const PROPERTY_ID_JSON_SCHEMA = { pattern: PROPERTY_ID_JSON_PATTERN, maxLength: MAX_PROPERTY_ID_LENGTH } as const;

export const ingestPropertySchema = z.object({
  id: z
    .string({ error: 'property id must be a string' })
    .min(1, { error: 'property id must be a non-empty string' })
    .meta({
      description: 'Letters and digits, then also `_ . : -`; not `id`, `lastUpdated` or `language` in any case. Canonicalized to lowercase.',
      ...PROPERTY_ID_JSON_SCHEMA,
    }),
  // `value` is required: an absent value is not `null` (null clears; absence is a mistake).
  value: z.custom<unknown>((v) => v !== undefined, { error: 'value is required (use null to clear a property)' }).pipe(ingestValueSchema),
  // A JSON `null` language is treated as absent (many serializers write nulls for unset fields).
  language: z
    .string({ error: 'language must be a string' })
    .min(1, { error: 'language must be a non-empty string' })
    .meta({ description: 'A BCP 47 language tag, e.g. `en`, `en-GB`.', pattern: LANGUAGE_PATTERN.source })
    .nullish(),
});

export const ingestEntrySchema = z.object({
  id: z.string({ error: 'entry id must be a string' }).min(1, { error: 'entry id must be a non-empty string' }).meta({ maxLength: MAX_ENTRY_ID_LENGTH }),
  properties: z.array(ingestPropertySchema, { error: 'properties must be an array' }),
});

export const typedIngestRequestSchema = z.object(
  {
    entries: z.array(ingestEntrySchema, { error: 'entries is required and must be an array' }).min(1, { error: 'entries must hold at least 1 entry' }),
  },
  { error: 'the request must be a JSON object with entries' },
);

export type ParsedIngestRequest = z.infer<typeof typedIngestRequestSchema>;

/** `['entries', 3, 'properties', 1, 'value']` -> `entries[3].properties[1].value`; the root is `$`. */
export function requestPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const segment of path) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else out += out.length === 0 ? String(segment) : `.${String(segment)}`;
  }
  return out.length === 0 ? '$' : out;
}

export function addError(errors: IngestErrors, path: string, message: string): void {
  const messages = (errors[path] ??= []);
  if (!messages.includes(message)) messages.push(message);
}

/** zod issues as messages keyed by request path. */
export function issuesToErrors(error: z.ZodError, errors: IngestErrors = {}): IngestErrors {
  for (const issue of error.issues) addError(errors, requestPath(issue.path), issue.message);
  return errors;
}
