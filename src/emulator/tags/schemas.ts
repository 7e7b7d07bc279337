import * as z from 'zod';
import { intParameter } from '../http/query.js';
import { component } from '../openapi/components.js';
import type { ParameterSpec } from '../openapi/operation.js';

/** Wire schemas of managed tags (spec: Managed tag) and of their seeding (seeding.ts). */

// Any UUID-shaped text, either case (no version check): what the emulator accepts and keeps (lowercased).
const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
const uuid = (message = 'must be a UUID') => z.string({ error: message }).regex(UUID, message).meta({ format: 'uuid' });
const timestamp = z.iso.datetime();

export const ManagedTagTypeSchema = component('ManagedTagType', z.enum(['Text', 'LocalizedText']));

export const ManagedTagSchema = component(
  'ManagedTag',
  z.strictObject({
    id: uuid(),
    displayName: z.string(),
    type: ManagedTagTypeSchema,
    parentId: uuid().nullable().meta({ description: "Parent managed tag; null for a root tag (the emulator's choice: the spec shows a UUID)." }),
    createdAt: timestamp,
    lastModifiedAt: timestamp,
    createdBy: uuid(),
    updatedBy: uuid(),
  }),
);

export const ManagedTagPageSchema = component(
  'ManagedTagPage',
  z.strictObject({
    items: z.array(ManagedTagSchema),
    after: z.string().optional().meta({ description: 'Cursor of the next page, bound to the filters; absent on the last page.' }),
    totalCount: z.int().min(0).meta({ description: 'Tags matching the filters, on every page.' }),
  }),
);

/** Accepted like the emulator does (`Date.parse` of an ISO 8601 text), described as a date-time. */
const isoTimestamp = (name: string) =>
  z
    .string()
    .refine((raw) => /^\d{4}-\d{2}-\d{2}/.test(raw) && !Number.isNaN(Date.parse(raw)), `${name} must be an ISO 8601 timestamp.`)
    .meta({ format: 'date-time' });

/** Query of `GET /v1/managed-tags`; `name` and `limit` are the emulator's names (the spec shows none). */
export const TAG_LIST_QUERY = {
  name: {
    schema: z.string().optional(),
    description: "Case-insensitive containment in `displayName`. The spec shows no name for this filter: the emulator's choice.",
    example: 'colour',
  },
  type: {
    schema: z.enum(['Text', 'LocalizedText'], { error: (issue) => `type must be Text or LocalizedText (got ${String(issue.input)}).` }).optional(),
    description: 'Tag type.',
  },
  parentId: { schema: uuid('parentId must be a UUID.').optional(), description: 'Parent managed tag.' },
  createdFrom: { schema: isoTimestamp('createdFrom').optional(), description: 'Created at or after (inclusive).' },
  createdTo: { schema: isoTimestamp('createdTo').optional(), description: 'Created at or before (inclusive).' },
  updatedFrom: { schema: isoTimestamp('updatedFrom').optional(), description: 'Last modified at or after (inclusive).' },
  updatedTo: { schema: isoTimestamp('updatedTo').optional(), description: 'Last modified at or before (inclusive).' },
  limit: {
    schema: intParameter('limit', 1, 500).optional().meta({ default: 50 }),
    description: "Page size. The spec shows no name for it: the emulator's choice.",
  },
  after: {
    schema: z.string().optional(),
    description: 'Cursor from the previous page. Filters must be kept when following cursors: a cursor with a changed filter set is a 400 naming `after`.',
  },
} satisfies Record<string, ParameterSpec>;

/** `POST /_emulator/tenants/{tenant}/managed-tags`; `createdAt`/`lastModifiedAt` let tests seed times for the date filters. */
export const NewManagedTagSchema = component(
  'NewManagedTag',
  z.object(
    {
      id: uuid('id must be a UUID.').optional(),
      displayName: z.string({ error: 'displayName is required.' }).refine((v) => v.trim() !== '', 'displayName is required.'),
      type: z.enum(['Text', 'LocalizedText'], 'type must be Text or LocalizedText.'),
      parentId: uuid('parentId must be a UUID.').nullish(),
      createdAt: isoTimestamp('createdAt').optional(),
      lastModifiedAt: isoTimestamp('lastModifiedAt').optional(),
    },
    { error: 'The body must be a JSON object.' },
  ),
);

export const NewCardDefinitionSchema = component(
  'NewCardDefinition',
  z.object(
    {
      id: uuid('id must be a UUID.').optional(),
      managedTagIds: z.array(z.string(), { error: 'managedTagIds must be an array of managed tag ids.' }),
    },
    { error: 'The body must be a JSON object.' },
  ),
);

export const CardDefinitionSchema = component('CardDefinition', z.strictObject({ id: uuid(), managedTagIds: z.array(uuid()) }));
