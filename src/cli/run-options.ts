import type { Argv, Options } from 'yargs';
import { RUN_OPTIONS, toKebab, type RunOptionKey } from '../config/options.js';
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
 * Declares the `run` options on a yargs command (no yargs defaults: env vars and --config must show
 * through). `describe` replaces the help of some options where the command finds or needs them
 * differently than `run` (what `run` requires, `dead-letters` does not).
 */
export function withRunOptions<T>(yargs: Argv<T>, omit: readonly RunOptionKey[] = [], describe: Partial<Record<RunOptionKey, string>> = {}): Argv<T> {
  let y = yargs;
  for (const option of RUN_OPTIONS) {
    if (omit.includes(option.key)) continue;
    const group = `${option.group}:`;
    y = y.option(
      toKebab(option.key),
      option.kind === 'boolean' ? booleanFlag(describe[option.key] ?? option.describe, group) : { type: 'string', describe: describe[option.key] ?? option.describe, group, requiresArg: true },
    );
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
