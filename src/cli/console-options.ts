import type { Argv } from 'yargs';
import { ConfigError } from '../errors.js';
import { parsePort } from './emulator-defaults.js';
import { booleanFlag, booleanFlagValue, numberOption } from './run-options.js';

/** `dev`'s console: on by default, on loopback, next to the emulator's port. */
export const CONSOLE_DEFAULTS = {
  port: 8788,
  host: '127.0.0.1',
  maxEvents: 500,
} as const;

const MAX_EVENTS_LIMIT = 100_000;

export type ConsoleCliOptions = { enabled: false } | { enabled: true; host: string; port: number; portIsDefault: boolean; maxEvents: number };

export function withConsoleOptions<T>(yargs: Argv<T>): Argv<T> {
  return yargs
    .option('console', booleanFlag('Serve the development console (--no-console: not)', 'Console:'))
    .option('console-port', numberOption(`Console port (default: ${CONSOLE_DEFAULTS.port}, or a free one when taken; 0 = a random free port)`, 'Console:'))
    .option('console-host', {
      type: 'string',
      requiresArg: true,
      describe: `Interface the console listens on (default: ${CONSOLE_DEFAULTS.host}; it has no login: keep it on loopback)`,
      group: 'Console:',
    })
    .option('console-events', numberOption(`Events the console keeps, the newest (default: ${CONSOLE_DEFAULTS.maxEvents})`, 'Console:'));
}

/** The console options of `dev`, checked: a bad value is a ConfigError naming the option (exit 2). */
export function parseConsoleOptions(args: { console?: unknown; consolePort?: unknown; consoleHost?: unknown; consoleEvents?: unknown }): ConsoleCliOptions {
  // `--console` is on unless turned off: unset means true.
  const enabled = args.console === undefined || booleanFlagValue(args.console, '--console');
  if (!enabled) return { enabled: false };
  const port = args.consolePort === undefined ? CONSOLE_DEFAULTS.port : parsePort(args.consolePort, '--console-port');
  const host = args.consoleHost === undefined ? CONSOLE_DEFAULTS.host : String(args.consoleHost).trim();
  if (host === '') throw new ConfigError('--console-host must be an interface address like 127.0.0.1 (got an empty value)', '--console-host');
  let maxEvents: number = CONSOLE_DEFAULTS.maxEvents;
  if (args.consoleEvents !== undefined) {
    maxEvents = Number(String(args.consoleEvents).trim());
    if (String(args.consoleEvents).trim() === '' || !Number.isInteger(maxEvents) || maxEvents < 1 || maxEvents > MAX_EVENTS_LIMIT) {
      throw new ConfigError(`--console-events must be 1..${MAX_EVENTS_LIMIT} (got ${String(args.consoleEvents)})`, '--console-events');
    }
  }
  return { enabled: true, host, port, portIsDefault: args.consolePort === undefined, maxEvents };
}
