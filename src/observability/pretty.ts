import { createRequire } from 'node:module';
import type { DestinationStream } from 'pino';

type Pretty = (options: Record<string, unknown>) => DestinationStream;

/** Levels (pino's numbers) whose records a terminal shows in full: warn and above. */
const FULL_FROM_LEVEL = 40;

/**
 * pino-pretty (a dependency) makes terminal output readable; should it be missing (a pruned
 * install), undefined and the caller writes JSON lines. `destination` is a stream or a file
 * descriptor (a handler thread writes to fd 1 or 2 itself).
 *
 * One line per record below warn (the message, after the handler's name when there is one), so an
 * event is one line and the start-up banner does not scroll away; warnings and errors in full,
 * fields and stack, and the start-up record with its configuration. `details` (log level debug or trace): every record in full.
 */
export function loadPretty(destination: NodeJS.WritableStream | DestinationStream | number, colorize: boolean, details = false): DestinationStream | undefined {
  let pretty: Pretty;
  try {
    pretty = createRequire(import.meta.url)('pino-pretty') as Pretty;
  } catch {
    return undefined;
  }
  const full = pretty({ colorize, destination, sync: true });
  if (details) return full;
  const compact = pretty({ colorize, destination, sync: true, hideObject: true, ignore: 'pid,hostname', messageFormat: '{if handler}{handler}: {end}{msg}' });
  return {
    write(line: string) {
      const level = /"level":(\d+)/.exec(line);
      // The start-up record shows the configuration in use, once.
      const inFull = (level !== null && Number(level[1]) >= FULL_FROM_LEVEL) || line.includes('"config":{');
      return (inFull ? full : compact).write(line);
    },
  } as DestinationStream;
}

/** Whether a pino level shows every record in full on a terminal. */
export const showsDetails = (level: string | undefined): boolean => level === 'debug' || level === 'trace';
