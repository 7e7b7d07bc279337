import * as z from 'zod';
import type { ParameterSpec } from '../openapi/operation.js';
import { validationProblem } from './problem.js';
import { issuesToErrors } from './validation.js';

/**
 * Query parameters checked with the zod schemas their operation declares (operation.ts), so the
 * description and the check are one. A parameter whose schema is an array is repeated
 * (`id=a&id=b`); any other may be given once. Unknown parameters are ignored. Every bad parameter
 * is reported at once, keyed by its name.
 */

type Specs = Record<string, ParameterSpec>;
export type QueryOf<S extends Specs> = { [K in keyof S]: z.output<S[K]['schema']> };

const repeatable = new WeakMap<Specs, ReadonlySet<string>>();

function unwrapped(schema: z.ZodType): z.ZodType {
  let current = schema as z.ZodType & { _zod: { def: { type: string; innerType?: z.ZodType } } };
  while (current._zod.def.innerType !== undefined && ['optional', 'default', 'prefault', 'nullable'].includes(current._zod.def.type)) {
    current = current._zod.def.innerType as typeof current;
  }
  return current;
}

function repeatableNames(specs: Specs): ReadonlySet<string> {
  let names = repeatable.get(specs);
  if (names === undefined) {
    names = new Set(Object.keys(specs).filter((name) => unwrapped(specs[name]!.schema) instanceof z.ZodArray));
    repeatable.set(specs, names);
  }
  return names;
}

/** The checked parameters, or the messages of every bad one keyed by its name. */
export function readQuery<S extends Specs>(
  specs: S,
  query: URLSearchParams,
): { value: QueryOf<S>; errors?: undefined } | { value?: undefined; errors: Record<string, string[]> } {
  const arrays = repeatableNames(specs);
  const raw: Record<string, unknown> = {};
  const errors: Record<string, string[]> = {};
  const shape: Record<string, z.ZodType> = {};
  for (const [name, spec] of Object.entries(specs)) {
    const values = query.getAll(name);
    if (arrays.has(name)) {
      if (values.length > 0) raw[name] = values;
    } else if (values.length > 1) {
      errors[name] = [`${name} must be given once.`];
      continue;
    } else if (values.length === 1) raw[name] = values[0];
    shape[name] = spec.schema;
  }
  const parsed = z.object(shape).safeParse(raw);
  if (!parsed.success) Object.assign(errors, issuesToErrors(parsed.error.issues));
  return Object.keys(errors).length > 0 ? { errors } : { value: parsed.data as QueryOf<S> };
}

/** The checked parameters; a 400 validation problem keyed by parameter name otherwise. */
export function parseQuery<S extends Specs>(specs: S, query: URLSearchParams): QueryOf<S> {
  const { value, errors } = readQuery(specs, query);
  if (errors) throw validationProblem(errors);
  return value;
}

/** An integer query parameter `min..max` (the text as sent, a number once checked). */
export function intParameter(name: string, min: number, max: number) {
  const range = (got: unknown) => `${name} must be an integer from ${min} to ${max} (got ${JSON.stringify(String(got).slice(0, 40))}).`;
  return z
    .string()
    .refine((text) => /^[+-]?\d{1,15}$/.test(text), { error: (issue) => range(issue.input) })
    .transform(Number)
    .pipe(
      z
        .int()
        .min(min, { error: (issue) => range(issue.input) })
        .max(max, { error: (issue) => range(issue.input) }),
    );
}
