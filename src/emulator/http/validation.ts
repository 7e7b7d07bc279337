import type * as z from 'zod';
import { HttpProblem, validationProblem } from './problem.js';

/** Formats a zod path the way the spec keys validation errors: `entries[3].properties[1].value`. */
export function requestPath(path: readonly PropertyKey[], root = '$'): string {
  let out = '';
  for (const segment of path) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else out += out === '' ? String(segment) : `.${String(segment)}`;
  }
  return out === '' ? root : out;
}

/** zod issues -> the spec's `errors` object (request path -> messages). */
export function issuesToErrors(issues: readonly z.core.$ZodIssue[], root = '$'): Record<string, string[]> {
  const errors: Record<string, string[]> = {};
  for (const issue of issues) {
    const key = requestPath(issue.path, root);
    (errors[key] ??= []).push(issue.message);
  }
  return errors;
}

/** Parses `value` with `schema` or throws a 400 validation problem keyed by request path. */
export function parseOrProblem<T extends z.ZodType>(schema: T, value: unknown): z.output<T> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  throw validationProblem(issuesToErrors(result.error.issues));
}

export { HttpProblem };
