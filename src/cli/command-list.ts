import type { CommandModule } from 'yargs';
import type { CliContext } from './context.js';

/** A command's options and handler (its name and summary are in COMMANDS). */
export type CommandFactory = (context: CliContext, setExitCode: (code: number) => void) => CommandModule;

export interface CommandEntry {
  /** The word that selects it. */
  name: string;
  /** yargs' command string (with its positionals). */
  command: string;
  /** Its line in the top-level help. */
  describe: string;
  load(): Promise<CommandFactory>;
}

/**
 * Every command, with the summary the top-level help shows; a command's module (its options, its
 * handler and what they import) loads only when its name is on the command line: `run` loads none of
 * dev's, the emulator's, init's or dead-letters' code (docs/benchmarks.md#cold-start).
 */
export const COMMANDS: readonly CommandEntry[] = [
  {
    name: 'run',
    command: 'run',
    describe: 'Run the worker against a platform API: pull leases, run the handlers, acknowledge',
    load: async () => (await import('./commands/run.js')).runCommand,
  },
  {
    name: 'emulator',
    command: 'emulator',
    describe: 'Serve the local platform emulator (public API and token issuer on one origin)',
    load: async () => (await import('./commands/emulator.js')).emulatorCommand,
  },
  {
    name: 'dev',
    command: 'dev',
    describe: 'Run the emulator and a worker against it in one process, for local development',
    load: async () => (await import('./commands/dev.js')).devCommand,
  },
  {
    name: 'check',
    command: 'check',
    describe: 'Load the configuration and the handlers, print which handler receives which event type, exit 0 or 1',
    load: async () => (await import('./commands/check.js')).checkCommand,
  },
  {
    name: 'dead-letters',
    command: 'dead-letters',
    describe: 'List, inspect, replay and purge the records of the dead-letter sink (--dead-letter)',
    load: async () => (await import('./commands/dead-letters.js')).deadLettersCommand,
  },
  {
    name: 'deferred',
    command: 'deferred',
    describe: 'List the runs waiting in the idempotency store (a retry time, an open breaker, an earlier run of their chain), run one now, or drop it',
    load: async () => (await import('./commands/deferred.js')).deferredCommand,
  },
  {
    name: 'init',
    command: 'init [dir]',
    describe: 'Start a project: package.json, a handler and its test in handlers/, .gitignore',
    load: async () => (await import('./commands/init.js')).initCommand,
  },
];

/**
 * The commands yargs gets: whole when their name is a word of `argv` (the one that runs is among
 * them, even after an option's value that happens to be a command's name), else only their name and
 * summary, which is all that the top-level help, the suggestion for a mistyped command and strict
 * mode read. With no command named at all, the help needs no module either.
 */
export async function commandsFor(argv: readonly string[], context: CliContext, setExitCode: (code: number) => void): Promise<CommandModule[]> {
  return Promise.all(
    COMMANDS.map(async (entry) => {
      const summary = { command: entry.command, describe: entry.describe };
      if (argv.includes(entry.name)) return { ...(await entry.load())(context, setExitCode), ...summary };
      return {
        ...summary,
        // Unreachable: yargs runs a command only when its name is a word of argv.
        handler: () => {
          throw new Error(`command ${entry.name} ran without its module`);
        },
      };
    }),
  );
}
