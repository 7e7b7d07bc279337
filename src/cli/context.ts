import type { Writable } from 'node:stream';

/** What a command sees of the process: streams, environment, folder. Tests pass their own. */
export interface CliContext {
  stdout: Writable;
  stderr: Writable;
  env: NodeJS.ProcessEnv;
  cwd: string;
  /**
   * After a long-running command finished, exit even if a stray handle (a socket, a timer of a
   * dependency) would keep the process alive (default true in the bin; off when embedding main()).
   */
  forceExit: boolean;
}

/** A usage mistake caught by yargs (unknown option, missing value): exit 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** Writes `durable-worker: <message>` as ONE line. */
export function printError(context: CliContext, message: string): void {
  context.stderr.write(`durable-worker: ${message.replace(/\s*\n\s*/g, ' ').trim()}\n`);
}
