/**
 * `dev`'s type check of TypeScript handlers after each start and reload: tsx runs them without
 * checking types, so a type error would show only as failed events. The check (`durable-worker
 * check --types-only`, with the project's own typescript; no handler module is imported) runs in a
 * child process, so the handlers and the pull
 * loop never wait for the compiler; its errors are warnings, the handlers keep running as saved.
 */
import { execFile, type ChildProcess } from 'node:child_process';
import { readdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';

/** This package's CLI (src/dev/ and dist/dev/ sit two levels below the package root). */
const CLI = fileURLToPath(new URL('../../bin/durable-worker.js', import.meta.url));
const TYPE_ERROR = /^durable-worker: problem: (.+?:\d+:\d+: TS\d+: .*)$/;

async function hasTypeScript(dir: string): Promise<boolean> {
  const entries = await readdir(dir, { recursive: true }).catch(() => [] as string[]);
  return entries.some((path) => /\.[mc]?ts$/.test(path) && !path.includes('node_modules'));
}

export interface TypeWatch {
  /** Checks again (at most one check at a time; a request during one makes one more after it). */
  check(): void;
  close(): void;
}

export function watchTypes(handlersDir: string, cwd: string, logger: Logger): TypeWatch {
  let child: ChildProcess | undefined;
  let running = false;
  let again = false;
  let closed = false;
  let lastErrors = 0;
  const done = (errors: string[]) => {
    for (const error of errors) logger.warn({ typeError: error }, `type error: ${error} (the handlers run as saved: types are not checked at run time)`);
    if (errors.length === 0 && lastErrors > 0) logger.info('types: no type error left');
    lastErrors = errors.length;
    running = false;
    if (again && !closed) {
      again = false;
      run();
    }
  };
  const run = () => {
    running = true;
    void hasTypeScript(handlersDir).then((has) => {
      if (!has || closed) return done([]);
      child = execFile(process.execPath, [CLI, 'check', '--types-only', '--handlers', handlersDir], { cwd, timeout: 120_000 }, (_err, _stdout, stderr) => {
        child = undefined;
        if (!closed) done(stderr.split('\n').flatMap((line) => TYPE_ERROR.exec(line)?.[1] ?? []));
      });
    });
  };
  return {
    check() {
      if (closed) return;
      if (running) again = true;
      else run();
    },
    close() {
      closed = true;
      child?.kill();
    },
  };
}
