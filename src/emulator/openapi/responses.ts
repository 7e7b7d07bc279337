import * as z from 'zod';
import { ProblemDetails, ValidationProblem } from './components.js';
import type { ParameterSpec, ResponseSpec } from './operation.js';

/** Shorthands for route declarations (operation.ts). */

export function answer(description: string, schema: z.ZodType, example?: unknown): ResponseSpec {
  return { description, schema, ...(example === undefined ? {} : { example }) };
}

export function noContent(description: string): ResponseSpec {
  return { description };
}

export function problem(description: string): ResponseSpec {
  return { description, schema: ProblemDetails, mediaType: 'application/problem+json' };
}

/** A 400 whose `errors` map is always present (messages keyed by request path). */
export function validation(description: string): ResponseSpec {
  return { description, schema: ValidationProblem, mediaType: 'application/problem+json' };
}

/** A limit of the route itself (not only injected faults): 429 with `Retry-After`. */
export function rateLimited(description: string): ResponseSpec {
  return {
    ...problem(description),
    headers: { 'Retry-After': { description: 'Integer seconds to wait, minimum 1.', schema: z.int().min(1), required: true } },
  };
}

/** A path segment: any non-empty string (decoded). */
export function pathParameter(description: string, example?: string): ParameterSpec {
  return { schema: z.string().min(1), description, ...(example === undefined ? {} : { example }) };
}
