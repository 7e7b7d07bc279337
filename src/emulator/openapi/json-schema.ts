import * as z from 'zod';
import { wireSchemas } from './components.js';

export type JsonSchema = Record<string, unknown>;

const COMPONENTS = '#/components/schemas/';

interface ZodDef {
  type: string;
  catchall?: unknown;
}

/**
 * zod -> JSON Schema 2020-12 (the dialect of OpenAPI 3.1), saying what the emulator does rather
 * than what zod's default output claims:
 * - a `bigint` (integers beyond 2^53, parsed and written exactly) is a JSON `integer`;
 * - a plain `z.object` strips or tolerates unknown members, so it gets no
 *   `additionalProperties: false` (only `z.strictObject` does).
 */
const options = {
  io: 'output',
  unrepresentable: 'any',
  override: (ctx: { zodSchema: unknown; jsonSchema: JsonSchema }) => {
    const def = (ctx.zodSchema as { _zod: { def: ZodDef } })._zod.def;
    if (def.type === 'bigint') ctx.jsonSchema.type = 'integer';
    if (def.type === 'object' && def.catchall === undefined) delete ctx.jsonSchema.additionalProperties;
  },
} as const;

/** Every registered wire schema, by component name, referring to each other by `$ref`. */
export function componentSchemas(): Record<string, JsonSchema> {
  const { schemas } = z.toJSONSchema(wireSchemas, { ...options, uri: (id) => `${COMPONENTS}${id}` }) as { schemas: Record<string, JsonSchema> };
  for (const schema of Object.values(schemas)) {
    delete schema.$schema;
    delete schema.$id;
  }
  return schemas;
}

/** An inline schema (a parameter, a header): not a component, referring to none. */
export function inlineSchema(schema: z.ZodType): JsonSchema {
  const json = z.toJSONSchema(schema, options) as JsonSchema;
  delete json.$schema;
  return json;
}

export function componentRef(name: string): JsonSchema {
  return { $ref: `${COMPONENTS}${name}` };
}

/** Names of the components `value` refers to, directly. */
export function referencedComponents(value: unknown, into: Set<string> = new Set()): Set<string> {
  if (Array.isArray(value)) for (const item of value) referencedComponents(item, into);
  else if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      if (key === '$ref' && typeof item === 'string' && item.startsWith(COMPONENTS)) into.add(item.slice(COMPONENTS.length));
      else referencedComponents(item, into);
    }
  }
  return into;
}
