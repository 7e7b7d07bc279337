import { readFileSync } from 'node:fs';
import yargs from 'yargs';
import { toCamel } from '../config/options.js';
import { ErrorCodes, hasCode } from '../errors.js';
import { commandsFor } from './command-list.js';
import { UsageError, printError, type CliContext } from './context.js';
import { exitIfStillRunning } from './signals.js';

/** Exit codes (docs/operations.md), which scripts and orchestrators branch on: 0 normal, 1 fatal, 2 bad configuration. */
export const ExitCode = { OK: 0, FATAL: 1, CONFIG: 2 } as const;

function packageVersion(): string {
  try {
    // src/cli/main.ts and dist/cli/main.js both sit two levels below package.json.
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: string };
    return pkg.version ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

/** yargs' validation messages, as one line that names the option the way it is typed. */
export function usageMessage(message: string, argv: readonly string[]): string {
  const unknown = /^Unknown arguments?: (.+)$/s.exec(message);
  if (unknown?.[1] !== undefined) {
    const listed = unknown[1].split(',').map((n) => n.trim());
    // yargs lists an unknown `--no-flag=x` twice: as typed and camelCased (`noFlag`).
    const typedNames = new Set(listed.filter((n) => n.includes('-')).map(toCamel));
    const names = listed.filter((n) => n.includes('-') || !typedNames.has(n));
    return names
      .map((name) => {
        const typed = argv.find((a) => a === `--${name}` || a.startsWith(`--${name}=`) || a === `-${name}`);
        return typed !== undefined ? `unknown option ${typed.split('=')[0]}` : `unknown command or argument "${name}"`;
      })
      .join('; ');
  }
  const missing = /^Not enough arguments following: (.+)$/.exec(message);
  if (missing?.[1] !== undefined) return `--${missing[1]} needs a value`;
  return message.replace(/\s*\n\s*/g, ' ').trim();
}

/**
 * The CLI. Resolves to the exit code; the bin sets it. Long-running commands install their own
 * SIGTERM/SIGINT handlers (drain, then exit 0; a second signal exits at once).
 */
export async function main(argv: string[], overrides: Partial<CliContext> = {}): Promise<number> {
  const context: CliContext = {
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
    cwd: process.cwd(),
    forceExit: true,
    ...overrides,
  };
  let exitCode: number = ExitCode.OK;
  const setExitCode = (code: number) => {
    exitCode = code;
  };

  const parser = yargs(argv)
    // A flag given twice: the last one wins (`--limit 5 --limit 6` is 6), not an array of both.
    .parserConfiguration({ 'duplicate-arguments-array': false })
    .scriptName('durable-worker')
    .usage('$0 <command> [options]')
    .command(await commandsFor(argv, context, setExitCode))
    .example('$0 init my-worker', 'Start a project: package.json, a handler and its test')
    .example('$0 dev --demo', 'Try it: emulator + worker with ./handlers + sample traffic')
    .example('$0 check', 'Which handler in ./handlers receives which event type')
    .example('$0 run --base-url https://api.example.com --tenant t --client-id id --client-secret-file secret --destination my-consumer', 'The production job')
    .example('$0 dead-letters list', 'What was dead-lettered; then `dead-letters replay` once the handler is fixed')
    .example('$0 <command> --help', 'Every option of a command, with examples')
    .demandCommand(1, 'a command is required: init, dev, run, emulator, check, dead-letters or deferred (see --help)')
    .recommendCommands()
    .strict()
    .exitProcess(false)
    .help()
    .alias('help', 'h')
    .version(packageVersion())
    .wrap(Math.min(120, process.stdout.columns ?? 100))
    .epilogue('Exit codes: 0 normal, 2 bad configuration, 1 fatal. Docs: README.md')
    .fail((message, error) => {
      // Validation failures (message) are usage mistakes; errors thrown by a command pass through.
      // yargs reports some validation failures (a missing option value) as a YError, not a message.
      if (error?.name === 'YError') throw new UsageError(usageMessage(error.message, argv));
      throw error ?? new UsageError(usageMessage(message ?? 'invalid usage', argv));
    });

  try {
    await parser.parseAsync();
  } catch (err) {
    if (err instanceof UsageError || hasCode(err, ErrorCodes.CONFIG)) {
      printError(context, err instanceof Error ? err.message : String(err));
      return ExitCode.CONFIG;
    }
    printError(context, err instanceof Error ? err.message : String(err));
    if (context.env.DURABLE_WORKER_DEBUG === '1' && err instanceof Error && err.stack) context.stderr.write(`${err.stack}\n`);
    exitCode = ExitCode.FATAL;
  }
  const command = argv.find((a) => !a.startsWith('-'));
  // check and dead-letters too: a handler module may open connections at import time.
  if (context.forceExit && command !== undefined && ['run', 'dev', 'emulator', 'check', 'dead-letters', 'deferred'].includes(command))
    exitIfStillRunning(exitCode);
  return exitCode;
}
