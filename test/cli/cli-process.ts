import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { waitFor } from '../fixtures/wait-for.js';

/** The CLI as a real child process, from source (no build): `node --import tsx src/cli/entry.ts`. */
export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const ENTRY = join(REPO_ROOT, 'src', 'cli', 'entry.ts');
const TSX = pathToFileURL(createRequire(join(REPO_ROOT, 'package.json')).resolve('tsx')).href;

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  env?: Record<string, string>;
  cwd?: string;
}

/** Env without any DURABLE_WORKER_* of the machine running the tests. */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) if (!key.startsWith('DURABLE_WORKER_')) env[key] = value;
  return { ...env, NO_COLOR: '1', ...extra };
}

export class CliProcess {
  readonly child: ChildProcess;
  stdout = '';
  stderr = '';
  readonly exited: Promise<CliResult>;

  constructor(args: readonly string[], options: CliOptions = {}) {
    this.child = spawn(process.execPath, ['--import', TSX, ENTRY, ...args], {
      cwd: options.cwd ?? REPO_ROOT,
      env: cleanEnv(options.env),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (this.stdout += chunk));
    this.child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (this.stderr += chunk));
    this.exited = new Promise((resolve) => {
      this.child.on('close', (code, signal) => resolve({ code, signal, stdout: this.stdout, stderr: this.stderr }));
    });
  }

  /** Resolves with the first match of `pattern` in stdout, polling until `timeoutMs`. */
  async waitForOutput(pattern: RegExp, timeoutMs = 20_000): Promise<RegExpMatchArray> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const match = pattern.exec(this.stdout);
      if (match) return match;
      if (this.child.exitCode !== null || Date.now() > deadline) {
        throw new Error(`no ${pattern} in output (exit ${this.child.exitCode})\nstdout: ${this.stdout}\nstderr: ${this.stderr}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  kill(signal: NodeJS.Signals = 'SIGTERM'): void {
    if (this.child.exitCode === null) this.child.kill(signal);
  }
}

export function runCli(args: readonly string[], options: CliOptions = {}): Promise<CliResult> {
  return new CliProcess(args, options).exited;
}

/** Waits until a `run` process logged its metrics URL and answers /readyz 200 (token obtained, handlers loaded). */
export async function waitReady(child: CliProcess): Promise<void> {
  const [, metricsUrl] = await child.waitForOutput(/metrics at (http:\/\/127\.0\.0\.1:\d+)/, 60_000);
  const base = metricsUrl!.replace(/\/metrics$/, '');
  await waitFor(
    'readyz 200',
    async () =>
      (await fetch(`${base}/readyz`).then(
        (r) => r.status,
        () => 0,
      )) === 200,
    30_000,
  );
}
