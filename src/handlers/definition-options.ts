/**
 * The keys `defineHandler` and `defineBatchHandler` know, checked with zod in strict mode: a key the
 * worker does not know (`trasactional: true`, or `limits` on an older version) would otherwise be
 * accepted and do nothing, silently. The shapes of the known keys keep their own hand-written checks
 * (define.ts, loader.ts), whose messages name the option; `limits` is validated here.
 */
import { z } from 'zod';
import { HandlerLoadError } from '../errors.js';
import { didYouMean } from '../runtime/did-you-mean.js';
import { limitsSchema, resolveLimits, type ResolvedLimits } from './limits-options.js';

const COMMON_KEYS = ['type', 'schema', 'timeoutMs', 'transactional', 'setup', 'teardown', 'limits'] as const;
const KEYS = { defineHandler: [...COMMON_KEYS, 'handle'], defineBatchHandler: [...COMMON_KEYS, 'handleBatch', 'maxBatchSize'] } as const;

export type DefineCaller = keyof typeof KEYS;

/** The keys known at each nesting level, for "did you mean". */
const NESTED_KEYS: Record<string, readonly string[]> = {
  limits: ['rate', 'concurrency', 'perKey', 'adaptive'],
  'limits.rate': ['max', 'per'],
  'limits.perKey': ['key', 'rate', 'concurrency'],
  'limits.perKey.rate': ['max', 'per'],
};

const strictSchema = (keys: readonly string[]): z.ZodType => z.strictObject(Object.fromEntries(keys.map((k) => [k, k === 'limits' ? limitsSchema.optional() : z.unknown().optional()])));
const schemas: Record<DefineCaller, z.ZodType> = { defineHandler: strictSchema(KEYS.defineHandler), defineBatchHandler: strictSchema(KEYS.defineBatchHandler) };

const dotted = (path: readonly PropertyKey[]) => path.map(String).join('.');

/** One line for the first problem zod found, naming the key. */
function describeIssue(caller: DefineCaller, issue: z.core.$ZodIssue): string {
  const at = dotted(issue.path);
  if (issue.code === 'unrecognized_keys') {
    const known = at === '' ? KEYS[caller] : (NESTED_KEYS[at] ?? []);
    const key = issue.keys[0] as string;
    const name = at === '' ? key : `${at}.${key}`;
    const more = issue.keys.length > 1 ? ` (and ${issue.keys.slice(1).map((k) => `\`${k}\``).join(', ')})` : '';
    return `${caller}: unknown option \`${name}\`${more}${didYouMean(key, known)}`;
  }
  return `${caller}: \`${at}\`: ${issue.message}`;
}

/**
 * Refuses unknown keys and a bad `limits` with a {@link HandlerLoadError} naming the key (its `file`
 * empty: `defineHandler` runs inside the module, the loader that imported it names the file);
 * returns the limits in the limiter's units (undefined without `limits`).
 */
export function checkDefinitionOptions(caller: DefineCaller, definition: object): ResolvedLimits | undefined {
  const result = schemas[caller].safeParse(definition);
  if (!result.success) throw new HandlerLoadError('', describeIssue(caller, result.error.issues[0] as z.core.$ZodIssue));
  const limits = (result.data as { limits?: z.output<typeof limitsSchema> }).limits;
  return limits === undefined ? undefined : resolveLimits(limits);
}
