import { z } from 'zod';
import type { PropertyDataType } from '../types.js';
import { PROPERTY_DATA_TYPES } from './rules.js';

/**
 * Response shapes of the ingest interface as zod schemas (spec: Typed ingest response, Problem
 * details). They feed the OpenAPI description (openapi.ts); the request side reuses the very
 * schema that validates requests (schema.ts), so the description cannot drift from behaviour.
 */

export const propertyDataTypeSchema = z.enum(PROPERTY_DATA_TYPES as [PropertyDataType, ...PropertyDataType[]]);

export const typedIngestResponseSchema = z.strictObject({
  correlationId: z.uuid().meta({ description: 'Identifies this asynchronous batch; distinct from the HTTP trace id.' }),
  sourceId: z.string().min(1),
  acceptedAt: z.iso.datetime().meta({ description: 'Time of acceptance and queueing (UTC).' }),
  acceptedEntryCount: z.int().min(1),
  newPropertiesFound: z.array(
    z.strictObject({
      id: z.string(),
      type: propertyDataTypeSchema,
      delimiter: z.string().optional().meta({ description: 'Delimiter, for list types.' }),
    }),
  ),
});

/** RFC 9457 problem details as the spec lists them; `errors` (validation problems) maps request paths to messages. */
export const problemDetailsSchema = z.looseObject({
  type: z.string(),
  title: z.string(),
  status: z.int().min(400).max(599),
  detail: z.string(),
  instance: z.string(),
  traceId: z
    .string()
    .regex(/^[0-9a-f]{32}$/)
    .meta({ description: 'W3C trace id.' }),
  errors: z.record(z.string(), z.array(z.string())).optional(),
});

/** The validation problem (`400`): `errors` is required there (spec: "required in that shape"). */
export const validationProblemSchema = problemDetailsSchema.extend({
  status: z.literal(400),
  errors: z.record(z.string(), z.array(z.string())),
});

/** Legacy import answers (shapes not shown in the spec; ours, see emulator/legacy-import). */
export const legacyImportAcceptedSchema = z.strictObject({
  correlationId: z.uuid(),
  dataSource: z.string().min(1),
  acceptedAt: z.iso.datetime(),
  acceptedEntryCount: z.int().min(1),
});

export const legacyImportVerifiedSchema = z.strictObject({
  dataSource: z.string().min(1),
  valid: z.literal(true),
  entryCount: z.int().min(1),
});
