import type { Argv, Options } from 'yargs';
import { RUN_OPTIONS, toKebab, type OptionSpec, type RunOptionKey } from '../config/options.js';
import { BOOLEAN_MESSAGE, toBoolean } from '../config/schema.js';
import { ConfigError } from '../errors.js';

/**
 * A boolean flag, declared without a yargs type: yargs' `boolean` turns any value but `true` into
 * false (`--exit-when-idle=maybe` would silently mean false). Untyped, `--flag` alone is true,
 * `--no-flag` false, and `--flag=VALUE` (or `--flag VALUE`) reaches the schema as written, which
 * accepts true/false (1/0) and refuses anything else naming the option, like the env var.
 */
export function booleanFlag(describe: string, group: string): Options {
  return { describe, group };
}

/** The value of a flag declared with `booleanFlag` that is not a run option (`dev --demo`); unset or empty is false. */
export function booleanFlagValue(value: unknown, option: string): boolean {
  if (value === undefined || value === '') return false;
  const parsed = toBoolean(value);
  if (typeof parsed !== 'boolean') throw new ConfigError(`${option} ${BOOLEAN_MESSAGE} (got ${String(value)})`, option);
  return parsed;
}

/**
 * A number option: parsed as a string (`--limit abc` reaches the validation, which names it as
 * written; yargs' number would make it NaN) and shown as [number]: yargs' help labels a key
 * declared both ways with its number type, its parser keeps a string key's value as written.
 */
export function numberOption(describe: string, group: string | undefined): Options {
  return { string: true, number: true, describe, requiresArg: true, ...(group === undefined ? {} : { group }) };
}

/** A run option as yargs declares it. */
function yargsOption(option: OptionSpec, describe: string, hidden: boolean): Options {
  const group = `${option.group}:`;
  if (option.kind === 'boolean') return { ...booleanFlag(describe, group), hidden };
  if (option.kind === 'number') return { ...numberOption(describe, group), hidden };
  return { type: 'string', describe, group, requiresArg: true, hidden };
}

/**
 * Declares the `run` options on a yargs command (no yargs defaults: env vars and --config must show
 * through). `describe` replaces the help of some options where the command finds or needs them
 * differently than `run` (what `run` requires, `dead-letters` does not). With `shown`, --help lists
 * only those: the others are accepted (a worker's own command line or --config may be passed) and
 * have no effect on this command.
 */
export function withRunOptions<T>(
  yargs: Argv<T>,
  omit: readonly RunOptionKey[] = [],
  describe: Partial<Record<RunOptionKey, string>> = {},
  shown?: readonly RunOptionKey[],
): Argv<T> {
  let y = yargs;
  for (const option of RUN_OPTIONS) {
    if (omit.includes(option.key)) continue;
    y = y.option(toKebab(option.key), yargsOption(option, describe[option.key] ?? option.describe, shown !== undefined && !shown.includes(option.key)));
  }
  return y.option('config', {
    type: 'string',
    describe: 'JSON file of run options (camelCase or kebab-case keys); flags and env vars win over it',
    requiresArg: true,
  });
}

/** The run options yargs parsed (camelCase), without yargs' own keys. */
export function pickRunFlags(argv: Record<string, unknown>): Record<string, unknown> {
  const flags: Record<string, unknown> = {};
  for (const option of RUN_OPTIONS) if (argv[option.key] !== undefined) flags[option.key] = argv[option.key];
  if (argv.config !== undefined) flags.config = argv.config;
  return flags;
}
