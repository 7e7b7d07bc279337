import * as z from 'zod';
import { problemDetailsSchema, validationProblemSchema } from '../../ingest/response-schema.js';

/**
 * The wire schemas of the emulator's OpenAPI description: each request body and answer body is a
 * zod schema registered here under the name it has in `components.schemas`. The emulator validates
 * requests with the same schemas, so the description cannot drift from what is accepted.
 *
 * Conventions (json-schema.ts): a `z.strictObject` is sent with exactly its members
 * (`additionalProperties: false`); a plain `z.object` strips or tolerates unknown members, so the
 * description does not refuse them.
 */
export const wireSchemas = z.registry<{ id: string }>();

/** Registers `schema` as the component `id` and returns it. */
export function component<T extends z.ZodType>(id: string, schema: T): T {
  wireSchemas.add(schema, { id });
  return schema;
}

/** The component name of a registered schema. */
export function componentName(schema: z.ZodType): string {
  const id = wireSchemas.get(schema)?.id;
  if (id === undefined) throw new Error('a request or answer body of the OpenAPI description must be a registered component (component())');
  return id;
}

/** RFC 9457 problem details as the spec lists them (every error of the public API). */
export const ProblemDetails = component('ProblemDetails', problemDetailsSchema);
/** A validation problem: `errors` maps request paths to messages (spec: "required in that shape"). */
export const ValidationProblem = component('ValidationProblem', validationProblemSchema);
