import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, fstatSync, openSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));
const ENTRY = join(REPO_ROOT, 'src', 'cli', 'entry.ts');
const BIN = join(REPO_ROOT, 'bin', 'durable-worker.js');
const TSX = pathToFileURL(createRequire(join(REPO_ROOT, 'package.json')).resolve('tsx')).href;

/** One `durable-worker run` process that ever ran in a slot. */
export interface ProcessRecord {
  slot: number;
  pid: number;
  startedAtMs: number;
  /** Set when the runner SIGKILLed it. */
  killedAtMs?: number;
  exit?: { code: number | null; signal: NodeJS.Signals | null };
}

export interface SlotOptions {
  slot: number;
  /** `run` flags shared by every process of the run. */
  args: readonly string[];
  env: Record<string, string>;
  logDir: string;
  /** `source`: node --import tsx src/cli/entry.ts (no build); `dist`: bin/durable-worker.js (after npm run build). */
  from: 'source' | 'dist';
}

/** Env of the machine minus any DURABLE_WORKER_* (the run passes everything as flags). */
function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) if (!key.startsWith('DURABLE_WORKER_')) env[key] = value;
  return { ...env, NO_COLOR: '1', ...extra };
}

/** Every live child of this process, so an interrupted run leaves none behind (killLiveChildren). */
const live = new Set<ChildProcess>();

/** SIGKILLs every child still running; for the runner's own SIGINT/SIGTERM handler. */
export function killLiveChildren(): void {
  for (const child of live) child.kill('SIGKILL');
}

/**
 * A worker slot: at most one live process at a time, stable worker ids (`chaos-<slot>-<n>`), its own
 * dead-letter file and log file. A restarted process reuses the slot's worker ids, as a restarted
 * pod would.
 */
export class WorkerSlot {
  readonly processes: ProcessRecord[] = [];
  #child: ChildProcess | undefined;
  #exited: Promise<void> = Promise.resolve();
  /** The slot's log file and where the current process's lines start in it. */
  #logFile = '';
  #logOffset = 0;

  constructor(private readonly o: SlotOptions) {}

  get running(): boolean {
    return this.#child !== undefined && this.#child.exitCode === null && this.#child.signalCode === null;
  }

  start(): ProcessRecord {
    if (this.running) throw new Error(`slot ${this.o.slot} already runs a process`);
    this.#logFile = join(this.o.logDir, `worker-${this.o.slot}.log`);
    const log = openSync(this.#logFile, 'a');
    this.#logOffset = fstatSync(log).size;
    const args = [...this.o.args, '--worker-id-prefix', `chaos-${this.o.slot}`];
    const argv = this.o.from === 'dist' ? [BIN, 'run', ...args] : ['--import', TSX, ENTRY, 'run', ...args];
    const child = spawn(process.execPath, argv, { cwd: REPO_ROOT, env: cleanEnv(this.o.env), stdio: ['ignore', log, log] });
    closeSync(log);
    if (child.pid === undefined) throw new Error(`slot ${this.o.slot}: spawn failed`);
    const record: ProcessRecord = { slot: this.o.slot, pid: child.pid, startedAtMs: Date.now() };
    this.processes.push(record);
    this.#child = child;
    live.add(child);
    this.#exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        live.delete(child);
        record.exit = { code, signal };
        resolve();
      });
    });
    return record;
  }

  /** SIGKILL: no drain, no ack, leases left to expire (what an OOM kill or a node loss does). */
  async kill(): Promise<ProcessRecord | undefined> {
    const child = this.#child;
    if (child === undefined || !this.running) return undefined;
    const record = this.processes.at(-1) as ProcessRecord;
    record.killedAtMs = Date.now();
    child.kill('SIGKILL');
    await this.#exited;
    return record;
  }

  /**
   * Resolves once the current process logged `worker started` (its shutdown handlers are in place),
   * or it exited, or `timeoutMs` passed. The final SIGTERM waits for it: a process signalled while
   * Node itself is still booting dies by the signal, which says nothing about the drain.
   */
  async waitUntilStarted(timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (!this.running) return false;
      if (readFileSync(this.#logFile).subarray(this.#logOffset).includes('"msg":"worker started"')) return true;
      if (Date.now() > deadline) return false;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /** SIGTERM and wait up to `timeoutMs` for the drain; SIGKILL after that. Returns false when it had to force. */
  async stop(timeoutMs: number): Promise<boolean> {
    const child = this.#child;
    if (child === undefined || !this.running) return true;
    child.kill('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const drained = await Promise.race([
      this.#exited.then(() => true),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs))),
    ]);
    clearTimeout(timer);
    if (!drained) {
      child.kill('SIGKILL');
      await this.#exited;
    }
    return drained;
  }
}

/** True when no process with this pid exists any more (signal 0 probes without sending). */
export function isGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}
