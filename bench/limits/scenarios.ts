import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PlatformProcess, REPO_ROOT } from '../outage/processes.js';
import { busiestPerSubject, busiestWindow, mostAtOnce, readRecords } from './measure.js';
import { Replica, replicaArgs } from './replicas.js';

export interface ReplicaRun {
  store: string;
  events: number;
  /** Seconds from the first run start to the last. */
  spanSeconds: number;
  /** Seconds from the replicas' start to both exited. */
  wallSeconds: number;
  busiest: number;
  worstSubject?: { subject: string; count: number };
  attemptsAbove1: number;
  distinctRuns: number;
  deadLetters: number;
  head: number;
  committed: number;
  exits: (number | null | 'timeout')[];
}

export interface ScenarioSetup {
  scenario: 'rate' | 'perkey' | 'concurrency';
  store: string;
  /** Subjects of the events, in stream order. */
  subjects: string[];
  replicas: number;
  extraArgs?: string[];
  env?: Record<string, string>;
  timeoutMs: number;
  /** While the replicas run (e.g. kill one). */
  during?: (replicas: Replica[], startedAtMs: number) => Promise<void>;
  keep?: boolean;
}

/**
 * The emulator in its own process with every event appended before the replicas start (waiting
 * events), then `replicas` `durable-worker run --exit-when-idle` processes on `store`, a fresh prefix.
 */
export async function runReplicas(
  setup: ScenarioSetup,
): Promise<ReplicaRun & { records: ReturnType<typeof readRecords>; startedAtMs: number; replicaPids: number[] }> {
  const dir = mkdtempSync(join(tmpdir(), 'dw-limits-'));
  const platform = await PlatformProcess.start();
  const replicas: Replica[] = [];
  try {
    for (let i = 0; i < setup.subjects.length; i += 500) await platform.append(setup.subjects.slice(i, i + 500));
    const record = join(dir, 'runs.jsonl');
    const args = [
      ...replicaArgs(platform.url, dir, { handlers: join(REPO_ROOT, 'bench/limits/handlers'), store: setup.store, prefix: `bench-limits-${Date.now()}` }),
      '--exit-when-idle',
      ...(setup.extraArgs ?? []),
    ];
    const env = { DURABLE_WORKER_CLIENT_SECRET: 'dev-secret', BENCH_SCENARIO: setup.scenario, BENCH_RECORD: record, ...setup.env };
    const startedAtMs = Date.now();
    for (let i = 0; i < setup.replicas; i++) replicas.push(await Replica.start(args, env, join(dir, `replica-${i}.log`)));
    const during = setup.during?.(replicas, startedAtMs);
    const exits = await Promise.all(replicas.map((r) => r.exitWithin(setup.timeoutMs)));
    await during;
    const wallSeconds = (Date.now() - startedAtMs) / 1_000;
    const records = readRecords(existsSync(record) ? readFileSync(record, 'utf8') : '');
    const times = records.starts.map((s) => s.t);
    const consumer = await platform.consumer();
    const deadFile = join(dir, 'dead-letter.jsonl');
    return {
      store: setup.store.replace(/\/\/[^@]*@/, '//'),
      events: setup.subjects.length,
      spanSeconds: times.length === 0 ? 0 : (Math.max(...times) - Math.min(...times)) / 1_000,
      wallSeconds,
      busiest: busiestWindow(times, 1_000),
      ...(setup.scenario === 'perkey' ? { worstSubject: busiestPerSubject(records.starts, 1_000) } : {}),
      attemptsAbove1: records.starts.filter((s) => s.a !== 1).length,
      distinctRuns: new Set(records.starts.map((s) => s.id)).size,
      deadLetters: existsSync(deadFile) ? readFileSync(deadFile, 'utf8').split('\n').filter(Boolean).length : 0,
      head: consumer.head,
      committed: consumer.committed,
      exits,
      records,
      startedAtMs,
      replicaPids: replicas.map((r) => r.pid),
    };
  } finally {
    for (const replica of replicas) if (replica.child.exitCode === null && replica.child.signalCode === null) replica.child.kill('SIGKILL');
    await platform.stop();
    if (setup.keep === true) process.stderr.write(`run folder kept: ${dir}\n`);
    else rmSync(dir, { recursive: true, force: true });
  }
}

export { mostAtOnce };
