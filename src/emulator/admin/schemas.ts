import * as z from 'zod';
import { ALL_SCOPES, DESTINATION_TYPES, redirectUriSchema } from '../config.js';
import { faultOptionsSchema } from '../faults/options.js';
import { component } from '../openapi/components.js';

/** Wire schemas of the seeding, state and fault endpoints under `/_emulator` (routes.ts). */

const id = z.string().min(1).max(200);

export const NewEventDestinationSchema = component('NewEventDestination', z.object({ id, type: z.enum(DESTINATION_TYPES) }));

export const EventDestinationSchema = component(
  'EventDestination',
  z.strictObject({ tenant: z.string(), id: z.string(), type: z.enum(DESTINATION_TYPES), paused: z.boolean() }),
);

export const NewApplicationSchema = component(
  'NewApplication',
  z.object({
    tenant: id.optional().meta({ description: 'Default `dev-tenant` (created when absent).' }),
    clientId: id,
    clientSecret: z.string().min(1),
    scopes: z.array(z.enum(ALL_SCOPES)),
    sources: z
      .union([z.literal('all'), z.array(id)])
      .optional()
      .meta({ description: "Sources it may write: 'all' (default) or a list." }),
    dataProvider: z.boolean().optional().meta({ description: 'A legacy data provider: import operations on its sources only.' }),
    redirectUris: z
      .array(redirectUriSchema)
      .optional()
      .meta({ description: 'Redirect URIs of the interactive sign-in, matched exactly (any port for `http` on `127.0.0.1` or `[::1]`). Default: none.' }),
  }),
);

export const ApplicationSchema = component(
  'Application',
  z
    .strictObject({
      tenant: z.string(),
      clientId: z.string(),
      scopes: z.array(z.enum(ALL_SCOPES)),
      sources: z.union([z.literal('all'), z.array(z.string())]),
      dataProvider: z.boolean(),
      redirectUris: z.array(z.string()),
    })
    .meta({ description: 'The application as registered; the secret is not echoed back.' }),
);

/** Appends raw events to a tenant stream, for tests of workers without ingest. */
export const NewEventsSchema = component(
  'NewEvents',
  z.object({
    events: z
      .array(z.object({ type: z.string().min(1), subject: z.string(), data: z.unknown() }))
      .min(1)
      .max(10_000),
  }),
);

export const AppendedEventsSchema = component(
  'AppendedEvents',
  z.strictObject({ events: z.array(z.strictObject({ id: z.string(), sequence: z.string().regex(/^[1-9][0-9]*$/) })) }),
);

export const FaultOptionsSchema = component('FaultOptions', faultOptionsSchema);

const sequence = z.string().regex(/^[1-9][0-9]*$/);

export const EmulatorStateSchema = component(
  'EmulatorState',
  z.strictObject({
    tenants: z.array(
      z.strictObject({
        id: z.string(),
        head: sequence.nullable().meta({ description: 'Newest sequence of the stream; null while it is empty.' }),
        retainedEvents: z.int().min(0).meta({ description: 'Events still held (those every consumer committed are trimmed).' }),
        sources: z.array(z.strictObject({ id: z.string(), entryCount: z.int().min(0), propertyCount: z.int().min(0) })),
        destinations: z.array(z.strictObject({ id: z.string(), type: z.string(), paused: z.boolean() })),
        consumers: z.array(
          z.strictObject({
            id: z.string(),
            paused: z.boolean(),
            head: sequence.nullable(),
            committed: sequence.nullable().meta({ description: 'Sequence of the last committed event; null before the first commit.' }),
            leased: z.int().min(0),
            pendingRedelivery: z.int().min(0),
            startedAfter: z
              .string()
              .regex(/^(0|[1-9][0-9]*)$/)
              .meta({ description: 'The stream head when the consumer was created.' }),
            leases: z
              .array(
                z.strictObject({
                  leaseId: z.string(),
                  workerId: z.string().nullable().meta({ description: 'The workerId of the pull; null for pulls without one (they share one identity).' }),
                  generation: z.int().min(1),
                  attempt: z.int().min(1),
                  firstSequence: sequence,
                  lastSequence: sequence,
                  expiresAt: z.iso.datetime().meta({ description: 'When the lease expires unless acknowledged.' }),
                }),
              )
              .meta({ description: 'The leases held right now, oldest batch first.' }),
          }),
        ),
      }),
    ),
    faults: FaultOptionsSchema,
  }),
);
