import { createRequire } from 'node:module';
import type { DestinationStream } from 'pino';

/**
 * pino-pretty (a dependency) makes terminal output readable; should it be missing (a pruned
 * install), undefined and the caller writes JSON lines. `destination` is a stream or a file
 * descriptor (a handler thread writes to fd 1 or 2 itself).
 */
export function loadPretty(destination: NodeJS.WritableStream | DestinationStream | number, colorize: boolean): DestinationStream | undefined {
  try {
    const require = createRequire(import.meta.url);
    const pretty = require('pino-pretty') as (options: Record<string, unknown>) => DestinationStream;
    return pretty({ colorize, destination, sync: true });
  } catch {
    return undefined;
  }
}
