import { isatty } from 'node:tty';
import pino, { type DestinationStream } from 'pino';
import { loadPretty, showsDetails } from './pretty.js';

/**
 * How the log lines of a handler run reach a development console (`dev`, src/console/) in both
 * isolation modes, with nothing added to `run`:
 * - in-process (`--isolation none`) a handler logs through a child of the process logger: `dev`
 *   creates that logger with a `tap` (createLogger's option), which sees every line it writes;
 * - a worker thread has a logger of its own writing straight to fd 1. When the process that starts
 *   the threads sets HANDLER_LOG_CHANNEL_ENV (threads inherit its environment), the thread's logger
 *   also posts each line of a handler run (one that names an `eventId`) on the BroadcastChannel of
 *   that name. Without it, the thread logs exactly as before: the check is made once, at the start
 *   of the thread, never per line.
 */
export const HANDLER_LOG_CHANNEL_ENV = 'DURABLE_WORKER_HANDLER_LOG_CHANNEL';

/**
 * Where a handler thread writes its lines: `2` sends them to stderr (set by `dead-letters replay`,
 * whose table is stdout); anything else, stdout. Threads inherit the environment of the process
 * that starts them, like HANDLER_LOG_CHANNEL_ENV.
 */
export const HANDLER_LOG_FD_ENV = 'DURABLE_WORKER_HANDLER_LOG_FD';

/**
 * A quick test that a serialised pino line belongs to a handler run (its bindings carry `eventId`),
 * made before anything parses or posts it.
 */
export function isEventLine(line: string): boolean {
  return line.includes('"eventId":');
}

/** `primary` that also hands every line to `tap` (after writing it: the tap never delays the log). */
export function teeDestination(primary: DestinationStream, tap: (line: string) => void): DestinationStream {
  const flushable = primary as DestinationStream & { flush?: (cb?: (err?: Error) => void) => void; flushSync?: () => void };
  return {
    write(line: string) {
      const result = primary.write(line);
      tap(line);
      return result;
    },
    // pino's logger.flush() calls these when present.
    ...(typeof flushable.flush === 'function' ? { flush: (cb?: (err?: Error) => void) => flushable.flush!(cb) } : {}),
    ...(typeof flushable.flushSync === 'function' ? { flushSync: () => flushable.flushSync!() } : {}),
  } as DestinationStream;
}

/**
 * Lines for a person on a terminal, JSON for a pipe or a file: the same choice as the main thread's
 * logger (createLogger), made here from the file descriptor itself, which a thread shares with the
 * process, so that every thread of a process writes one format to one destination.
 */
function fdDestination(fd: number, level: string | undefined): DestinationStream {
  if (isatty(fd)) {
    const pretty = loadPretty(fd, true, showsDetails(level));
    if (pretty !== undefined) return pretty;
  }
  return pino.destination({ fd, sync: true });
}

/** The destination of a handler thread's logger: fd 1 (or 2, see HANDLER_LOG_FD_ENV), plus the console's channel while one listens. */
export function threadLogDestination(level?: string, env: NodeJS.ProcessEnv = process.env): DestinationStream {
  const stdout = fdDestination(env[HANDLER_LOG_FD_ENV] === '2' ? 2 : 1, level);
  const channelName = env[HANDLER_LOG_CHANNEL_ENV];
  if (channelName === undefined || channelName === '') return stdout;
  const channel = new BroadcastChannel(channelName);
  // The channel must not keep an idle thread alive: piscina owns the thread's lifetime.
  (channel as unknown as { unref?: () => void }).unref?.();
  return teeDestination(stdout, (line) => {
    if (isEventLine(line)) channel.postMessage(line);
  });
}
