import * as z from 'zod';
import { delimiterProblem, MAX_DELIMITER_LENGTH, PROPERTY_DATA_TYPES } from '../../ingest/index.js';
import { propertyDataTypeSchema } from '../../ingest/response-schema.js';
import type { PropertyDataType } from '../../types.js';
import { component } from '../openapi/components.js';

/** Wire schemas of source reads and metadata (spec: Source entry, Property item, Source property, Source). */

export const PropertyDataTypeSchema = component('PropertyDataType', propertyDataTypeSchema);

const timestamp = z.iso.datetime().meta({ description: 'UTC.' });

export const PropertyItem = component(
  'PropertyItem',
  z
    .strictObject({
      id: z.string().meta({ description: 'Property ID (lowercase at rest).' }),
      value: z.union([z.string(), z.number(), z.bigint(), z.boolean(), z.array(z.string()), z.null()]).meta({
        description: 'Typed by the current configuration: null for a cleared scalar, [] for a cleared list, the raw string for an unconfigured property.',
      }),
      type: PropertyDataTypeSchema.nullable().meta({ description: 'null for unconfigured properties.' }),
      delimiter: z.string().nullable().meta({ description: 'List delimiter.' }),
      lastUpdated: timestamp,
      language: z.string().nullable().meta({ description: 'null for non-localized properties.' }),
    })
    .meta({ description: 'All fields are present in every item; a localized property has one item per language.' }),
);

export const SourceEntry = component('SourceEntry', z.strictObject({ id: z.string(), properties: z.array(PropertyItem), lastUpdated: timestamp }));

export const SourceEntryList = component('SourceEntryList', z.strictObject({ items: z.array(SourceEntry) }));

/** Not shown by the spec ("carry previous and current values"): the entry in its read shape before and after. */
export const SourceEntryUpdatedData = component(
  'SourceEntryUpdatedData',
  z
    .strictObject({
      sourceId: z.string(),
      entryId: z.string(),
      previous: SourceEntry.nullable().meta({ description: 'The entry before the ingest; null when it is new.' }),
      current: SourceEntry,
    })
    .meta({ description: "Data of `source_entry.updated` (the emulator's choice: the spec does not show the schema)." }),
);

const nullableText = (field: string) => z.string({ error: `${field} must be a string or null` }).nullish();

/**
 * PUT body. The spec does not show which fields are required: none is, also when creating.
 * `type` is accepted as an extension (the spec's body has none, yet says a type change may
 * trigger reindexing).
 */
export const SourcePropertyUpdate = component(
  'SourcePropertyUpdate',
  z.object(
    {
      displayName: nullableText('displayName').refine((v) => v == null || v.trim().length > 0, { error: 'displayName must not be empty' }),
      delimiter: nullableText('delimiter')
        .superRefine((v, issue) => {
          const problem = v == null ? undefined : delimiterProblem(v);
          if (problem) issue.addIssue({ code: 'custom', message: problem });
        })
        // The refinement's bounds, stated for the published description (code points, as it counts).
        .meta({ minLength: 1, maxLength: MAX_DELIMITER_LENGTH }),
      description: nullableText('description').meta({ description: 'Null preserves the current value; an empty string clears it.' }),
      type: z
        .enum(PROPERTY_DATA_TYPES as [PropertyDataType, ...PropertyDataType[]], { error: `type must be one of ${PROPERTY_DATA_TYPES.join(', ')}` })
        .nullish()
        .meta({ description: "The emulator's extension: a changed type answers with state `Updating`, then `Active` once reindexed." }),
    },
    { error: 'the body must be a JSON object' },
  ),
);

export const SourceProperty = component(
  'SourceProperty',
  z.strictObject({
    id: z.string(),
    displayName: z.string(),
    description: z.string(),
    type: PropertyDataTypeSchema.nullable().meta({ description: 'null until a PUT sets one or an ingest infers one.' }),
    delimiter: z.string(),
    state: z.enum(['Active', 'Updating', 'Deleting']),
  }),
);

/** PATCH body: omitted or null fields remain unchanged; an empty description clears it. */
export const SourceUpdate = component(
  'SourceUpdate',
  z.object(
    {
      name: nullableText('name').refine((v) => v == null || v.trim().length > 0, { error: 'name must not be empty' }),
      description: nullableText('description'),
    },
    { error: 'the body must be a JSON object' },
  ),
);

export const Source = component(
  'Source',
  z.strictObject({
    id: z.string(),
    name: z.string(),
    description: z.string(),
    status: z.string().meta({ description: '`Active` (other values are not shown by the spec).', examples: ['Active'] }),
    type: z.string().meta({ description: '`Generic` (other values are not shown by the spec).', examples: ['Generic'] }),
    createdAt: timestamp,
    updatedAt: timestamp,
  }),
);
