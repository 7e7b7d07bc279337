/**
 * The keys `defineHandler` and `defineBatchHandler` know, at every level of their options, and the
 * check of them that runs inside `defineHandler` itself. Without zod on purpose: handler modules
 * import the package entry in every worker thread, which must load no third-party package
 * (test/handlers/entry-weight.test.ts); the loader validates the values with zod
 * (definition-options.ts).
 */
import { didYouMean } from '../runtime/did-you-mean.js';

const COMMON_KEYS = ['type', 'schema', 'timeoutMs', 'transactional', 'setup', 'teardown', 'limits'] as const;

export const DEFINITION_KEYS = { defineHandler: [...COMMON_KEYS, 'handle'], defineBatchHandler: [...COMMON_KEYS, 'handleBatch', 'maxBatchSize'] } as const;

export type DefineCaller = keyof typeof DEFINITION_KEYS;

/** The keys known inside `limits`, by path. */
export const NESTED_KEYS: Record<string, readonly string[]> = {
  limits: ['rate', 'concurrency', 'perKey', 'adaptive'],
  'limits.rate': ['max', 'per'],
  'limits.perKey': ['key', 'rate', 'concurrency'],
  'limits.perKey.rate': ['max', 'per'],
};

/** `defineHandler: unknown option \`limits.rate.maxx\`; did you mean "max"?` for the first unknown key(s) at `path`. */
export function unknownKeysMessage(caller: DefineCaller, path: string, keys: readonly string[]): string {
  const known = path === '' ? DEFINITION_KEYS[caller] : (NESTED_KEYS[path] ?? []);
  const key = keys[0] as string;
  const more =
    keys.length > 1
      ? ` (and ${keys
          .slice(1)
          .map((k) => `\`${k}\``)
          .join(', ')})`
      : '';
  return `${caller}: unknown option \`${path === '' ? key : `${path}.${key}`}\`${more}${didYouMean(key, known)}`;
}

/** The first level of `value` (the definition at path '') with keys nobody knows, as a message; undefined when none. */
export function unknownOption(caller: DefineCaller, value: object, path = ''): string | undefined {
  const known: readonly string[] = path === '' ? DEFINITION_KEYS[caller] : (NESTED_KEYS[path] ?? []);
  const unknown = Object.keys(value).filter((key) => !known.includes(key));
  if (unknown.length > 0) return unknownKeysMessage(caller, path, unknown);
  for (const key of Object.keys(value)) {
    const child = (value as Record<string, unknown>)[key];
    const childPath = path === '' ? key : `${path}.${key}`;
    if (NESTED_KEYS[childPath] !== undefined && typeof child === 'object' && child !== null && !Array.isArray(child)) {
      const problem = unknownOption(caller, child, childPath);
      if (problem !== undefined) return problem;
    }
  }
  return undefined;
}
