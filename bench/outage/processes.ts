import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { waitForOutput } from '../worker/child-output.js';

export const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Every child still running, so that an interrupted benchmark leaves none behind. */
const live = new Set<ChildProcess>();
export function killLiveChildren(): void {
  for (const child of live) child.kill('SIGKILL');
}

function track(child: ChildProcess): Promise<unknown> {
  live.add(child);
  const exited = once(child, 'exit');
  void exited.then(() => live.delete(child));
  return exited;
}

/** bench/outage/emulator-child.ts in its own process: appends over stdin, faults and state over HTTP. */
export class PlatformProcess {
  #output = '';
  readonly #child: ChildProcess;
  readonly #exited: Promise<unknown>;
  url = '';
  appended = 0;

  private constructor() {
    const entry = fileURLToPath(new URL('./emulator-child.ts', import.meta.url));
    this.#child = spawn(process.execPath, ['--import', 'tsx', entry], { stdio: ['pipe', 'pipe', 'inherit'] });
    this.#exited = track(this.#child);
    this.#child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (this.#output += chunk));
  }

  static async start(): Promise<PlatformProcess> {
    const platform = new PlatformProcess();
    platform.url = (await platform.#waitFor(/READY (\S+)/, 0))[1]!;
    return platform;
  }

  #waitFor(pattern: RegExp, from: number): Promise<RegExpExecArray> {
    return waitForOutput(() => this.#output, pattern, { from, exited: () => this.#child.exitCode !== null, child: 'emulator child' });
  }

  /** One event per subject, in this order (`<type>|<subject>` gives an event its type). */
  async append(subjects: readonly string[]): Promise<void> {
    if (subjects.length === 0) return;
    const from = this.#output.length;
    this.#child.stdin!.write(`APPEND ${subjects.join(' ')}\n`);
    await this.#waitFor(/APPENDED \d+\n/, from);
    this.appended += subjects.length;
  }

  /** `latencyMs` before the emulator answers each pull and each ack (its latency fault); 0 clears it. */
  async setLatency(latencyMs: number): Promise<void> {
    const faults = latencyMs > 0 ? { latencyMs, latencyRoutes: ['pull', 'ack'] } : {};
    const response = await fetch(`${this.url}/_emulator/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(faults),
    });
    if (response.status !== 200) throw new Error(`setting the emulator's faults: ${response.status} ${await response.text()}`);
  }

  /** dev-consumer as GET /_emulator/state shows it. */
  async consumer(): Promise<{ head: number; committed: number; leased: number }> {
    const state = (await (await fetch(`${this.url}/_emulator/state`)).json()) as {
      tenants: Array<{ id: string; consumers: Array<{ id: string; head: string | null; committed: string | null; leased: number }> }>;
    };
    const consumer = state.tenants.find((t) => t.id === 'dev-tenant')!.consumers.find((c) => c.id === 'dev-consumer')!;
    return { head: Number(consumer.head ?? 0), committed: Number(consumer.committed ?? 0), leased: consumer.leased };
  }

  async stop(): Promise<void> {
    this.#child.stdin!.end();
    await this.#exited;
  }
}

/** Counters of the worker's /metrics the benchmark follows. */
export interface WorkerCounters {
  pulls: number;
  requeuedAcks: number;
  committedAcks: number;
}

/** The sum of a counter's samples whose labels contain `labels` (e.g. `status="requeued"`). */
function sum(text: string, name: string, labels = ''): number {
  let total = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (labels !== '' && !line.includes(labels)) continue;
    total += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return total;
}

/**
 * `durable-worker run` as users start it (bin/durable-worker.js, the built dist/), a fresh process
 * with its log in `logFile`; its metrics URL read from the log's `health and metrics server listening`.
 */
export class WorkerProcess {
  readonly #child: ChildProcess;
  readonly #exited: Promise<unknown>;
  metricsUrl = '';

  private constructor(
    args: readonly string[],
    env: Record<string, string>,
    readonly logFile: string,
  ) {
    const log = openSync(logFile, 'a');
    const clean: NodeJS.ProcessEnv = {};
    for (const [key, value] of Object.entries(process.env)) if (!key.startsWith('DURABLE_WORKER_')) clean[key] = value;
    this.#child = spawn(process.execPath, [join(REPO_ROOT, 'bin', 'durable-worker.js'), 'run', ...args], {
      cwd: REPO_ROOT,
      env: { ...clean, NO_COLOR: '1', ...env },
      stdio: ['ignore', log, log],
    });
    closeSync(log);
    this.#exited = track(this.#child);
  }

  static async start(args: readonly string[], env: Record<string, string>, logFile: string): Promise<WorkerProcess> {
    const worker = new WorkerProcess(args, env, logFile);
    const line = await waitForOutput(() => readFileSync(logFile, 'utf8'), /"url":"([^"]+)\/metrics"[^\n]*health and metrics server listening/, {
      exited: () => worker.#child.exitCode !== null,
      child: 'durable-worker run',
    });
    worker.metricsUrl = line[1]!;
    return worker;
  }

  async counters(): Promise<WorkerCounters> {
    const text = await (await fetch(`${this.metricsUrl}/metrics`)).text();
    return {
      pulls: sum(text, 'durable_worker_pulls_total'),
      requeuedAcks: sum(text, 'durable_worker_acks_total', 'status="requeued"'),
      committedAcks: sum(text, 'durable_worker_acks_total', 'status="committed"'),
    };
  }

  /** SIGTERM, the drain; SIGKILL after `timeoutMs`. Resolves with the exit code (null when killed). */
  async stop(timeoutMs = 30_000): Promise<number | null> {
    if (this.#child.exitCode !== null) return this.#child.exitCode;
    this.#child.kill('SIGTERM');
    const timer = setTimeout(() => this.#child.kill('SIGKILL'), timeoutMs);
    await this.#exited;
    clearTimeout(timer);
    return this.#child.exitCode;
  }
}
