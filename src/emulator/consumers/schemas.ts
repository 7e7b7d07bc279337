import * as z from 'zod';
import { DESTINATION_TYPES } from '../config.js';
import { component } from '../openapi/components.js';
import { SourceEntryUpdatedData } from '../sources/schemas.js';

/** Wire schemas of the durable consumers (spec: Event lease batch, Acknowledge request and response). */

const sequence = z
  .string()
  .regex(/^[1-9][0-9]*$/)
  .meta({ description: 'Decimal string, increasing by 1 per tenant stream.', examples: ['42'] });

const eventAttributes = {
  specversion: z.literal('1.0'),
  id: z.string().min(1),
  source: z.string().min(1).meta({ description: 'CloudEvents source; the emulator writes `/tenants/{tenant}`.' }),
  subject: z.string(),
  sequence,
  time: z.iso.datetime().optional(),
  datacontenttype: z.string().optional(),
};

/** Any event of the stream; CloudEvents extension attributes are allowed. */
export const CloudEvent = component(
  'CloudEvent',
  z
    .looseObject({ ...eventAttributes, type: z.string().min(1), data: z.unknown() })
    .meta({ description: 'A CloudEvents 1.0 event as delivered by a durable consumer.' }),
);

/** Spec, Events 1: `source_entry.updated`, subject = the entry ID, previous and current values. */
export const SourceEntryUpdatedEvent = component(
  'SourceEntryUpdatedEvent',
  z
    .looseObject({ ...eventAttributes, type: z.literal('source_entry.updated'), data: SourceEntryUpdatedData })
    .meta({ description: 'Emitted once per entry of an applied ingest; `subject` is the entry ID.' }),
);

export const LeaseBatch = component(
  'LeaseBatch',
  z.strictObject({
    leaseId: z.string().min(1),
    generation: z.int().min(1).meta({ description: 'Higher for each redelivery of an expired or failed lease.' }),
    attempt: z.int().min(1).meta({ description: 'Delivery attempt of the batch.' }),
    events: z
      .array(z.union([SourceEntryUpdatedEvent, CloudEvent]))
      .min(1)
      .meta({ description: 'In stream order.' }),
  }),
);

export const AckRequest = component(
  'AckRequest',
  z.object({
    leaseId: z.string({ error: 'leaseId is required.' }).min(1, 'leaseId is required.'),
    generation: z.number({ error: 'generation must be an integer.' }).int('generation must be an integer.').min(1, 'generation must be at least 1.'),
    status: z.enum(['ok', 'failed'], 'status must be "ok" or "failed".'),
  }),
);

export const AckResponse = component(
  'AckResponse',
  z.strictObject({
    status: z.enum(['committed', 'requeued', 'stale']),
    committed: sequence.nullable().meta({ description: 'Sequence of the last committed event; null before the first commit.' }),
  }),
);

/** Answer of pause and resume (the spec does not show these operations: the emulator's choice). */
export const ConsumerState = component('ConsumerState', z.strictObject({ id: z.string(), type: z.enum(DESTINATION_TYPES), paused: z.boolean() }));
