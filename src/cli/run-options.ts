import type { Argv } from 'yargs';
import { RUN_OPTIONS, toKebab, type RunOptionKey } from '../config/options.js';

/** Declares the `run` options on a yargs command (no yargs defaults: env vars and --config must show through). */
export function withRunOptions<T>(yargs: Argv<T>, omit: readonly RunOptionKey[] = []): Argv<T> {
  let y = yargs;
  for (const option of RUN_OPTIONS) {
    if (omit.includes(option.key)) continue;
    y = y.option(toKebab(option.key), {
      type: option.kind === 'boolean' ? 'boolean' : 'string',
      describe: option.describe,
      group: `${option.group}:`,
      requiresArg: option.kind !== 'boolean',
    });
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
