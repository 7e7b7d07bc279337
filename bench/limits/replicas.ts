import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../outage/processes.js';
import { waitForOutput } from '../worker/child-output.js';

const live = new Set<ChildProcess>();
export function killReplicas(): void {
  for (const child of live) child.kill('SIGKILL');
}

/**
 * `run`'s options for a replica against the emulator process at `platformUrl` (its dev tenant and
 * consumer), its metrics on an ephemeral port and its dead letters in `dir`.
 */
export function replicaArgs(platformUrl: string, dir: string, options: { handlers: string; store: string; prefix: string }): string[] {
  return [
    ...['--base-url', platformUrl, '--tenant', 'dev-tenant', '--client-id', 'dev-client', '--destination', 'dev-consumer'],
    ...['--handlers', options.handlers, '--idempotency', options.store, '--idempotency-prefix', options.prefix],
    ...['--dead-letter', `file:${join(dir, 'dead-letter.jsonl')}`, '--metrics-port', '0', '--metrics-host', '127.0.0.1'],
  ];
}

/** `durable-worker run` (bin/, the built dist/) as a replica of its own, its log in `logFile`. */
export class Replica {
  readonly child: ChildProcess;
  readonly exited: Promise<number | null>;

  private constructor(
    args: readonly string[],
    env: Record<string, string>,
    readonly logFile: string,
  ) {
    const log = openSync(logFile, 'a');
    const clean: NodeJS.ProcessEnv = {};
    for (const [key, value] of Object.entries(process.env)) if (!key.startsWith('DURABLE_WORKER_')) clean[key] = value;
    this.child = spawn(process.execPath, [join(REPO_ROOT, 'bin', 'durable-worker.js'), 'run', ...args], {
      cwd: REPO_ROOT,
      env: { ...clean, NO_COLOR: '1', ...env },
      stdio: ['ignore', log, log],
    });
    closeSync(log);
    live.add(this.child);
    this.exited = once(this.child, 'exit').then(() => {
      live.delete(this.child);
      return this.child.exitCode;
    });
  }

  static async start(args: readonly string[], env: Record<string, string>, logFile: string): Promise<Replica> {
    const replica = new Replica(args, env, logFile);
    await waitForOutput(() => readFileSync(logFile, 'utf8'), /health and metrics server listening/, {
      exited: () => replica.child.exitCode !== null,
      child: 'durable-worker run',
    });
    return replica;
  }

  get pid(): number {
    return this.child.pid as number;
  }

  /** Resolves with the exit code once it exits by itself (--exit-when-idle), or null after `timeoutMs` (then SIGTERM). */
  async exitWithin(timeoutMs: number): Promise<number | null | 'timeout'> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), timeoutMs)));
    const result = await Promise.race([this.exited, timeout]);
    clearTimeout(timer);
    if (result === 'timeout') {
      this.child.kill('SIGTERM');
      await this.exited;
    }
    return result;
  }
}
