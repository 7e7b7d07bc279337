/**
 * The options of `defineHandler` and `defineBatchHandler`, checked by the loader with zod in strict
 * mode: a key the worker does not know (`trasactional: true`, or `limits` on an older version) would
 * otherwise be accepted and do nothing, silently. `defineHandler` itself refuses unknown keys without
 * zod (option-keys.ts: the package entry loads no third-party package); here `limits` is validated
 * and resolved too. The shapes of the other keys keep their own hand-written checks (define.ts,
 * loader.ts), whose messages name the option.
 */
import { z } from 'zod';
import { HandlerLoadError } from '../errors.js';
import { limitsSchema, resolveLimits, type ResolvedLimits } from './limits-options.js';
import { DEFINITION_KEYS, unknownKeysMessage, type DefineCaller } from './option-keys.js';

const strictSchema = (keys: readonly string[]): z.ZodType =>
  z.strictObject(Object.fromEntries(keys.map((k) => [k, k === 'limits' ? limitsSchema.optional() : z.unknown().optional()])));
const schemas: Record<DefineCaller, z.ZodType> = {
  defineHandler: strictSchema(DEFINITION_KEYS.defineHandler),
  defineBatchHandler: strictSchema(DEFINITION_KEYS.defineBatchHandler),
};

const dotted = (path: readonly PropertyKey[]) => path.map(String).join('.');

/** One line for the first problem zod found, naming the key. */
function describeIssue(caller: DefineCaller, issue: z.core.$ZodIssue): string {
  const at = dotted(issue.path);
  if (issue.code === 'unrecognized_keys') return unknownKeysMessage(caller, at, issue.keys);
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
