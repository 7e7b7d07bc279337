/**
 * One run of bench/transactional: a FRESH `durable-worker run` process (the compiled bin) on a
 * backlog of events in the emulator (another process, bench/worker/emulator.ts), with
 * `--idempotency` the PostgreSQL database the handler writes to, until the consumer's cursor reaches
 * the head. Measured from the worker's 'worker started' log line to the drain: events/s, and the CPU
 * the worker process spent meanwhile (all its threads: /proc/<pid>/stat) per event. Sampled every
 * 100 ms meanwhile: the PostgreSQL connections the worker process holds (its TCP sockets to the
 * server, named by pg_stat_activity's application_name), and the CPU of the server processes
 * (backends) behind them: on a shared machine the database's work is part of the cost. The worker's
 * write and read system calls per event count its round trips (each one writes its request once).
 *
 * Then the correctness check: one row per event (count = N) and each written once (sum(writes) = N).
 * A run that lost or doubled an event throws: its figures would mean nothing.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync, readdirSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import type { EmulatorChild } from '../worker/emulator.js';

export const VARIANTS = ['plain', 'tx', 'plain-batch', 'tx-batch'] as const;
export type Variant = (typeof VARIANTS)[number];
export type Isolation = 'none' | 'thread';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** Subjects of the events: one subject's events run one after another. */
export const SUBJECTS = 50;

export interface RunOptions {
  em: EmulatorChild;
  db: pg.Pool;
  databaseUrl: string;
  variant: Variant;
  isolation: Isolation;
  events: number;
  maxInProgress: number;
  /** A checkout whose bin and bench/transactional/handlers to run instead of this one's (a baseline build). */
  workerRoot?: string;
  /** Unique per run: the table and the idempotency prefix. */
  name: string;
  scratch: string;
}

export interface RunResult {
  variant: Variant;
  /** Its round (main.ts): the ratios pair runs of one round. */
  round?: number;
  isolation: Isolation;
  events: number;
  seconds: number;
  eventsPerSecond: number;
  cpuUsPerEvent: number;
  /** CPU of the PostgreSQL backends serving the worker's connections, per event, in µs. */
  serverCpuUsPerEvent: number;
  /** write(v) and read system calls of the worker process per event (/proc/<pid>/io): its round trips and HTTP. */
  writesPerEvent: number;
  readsPerEvent: number;
  /** Most PostgreSQL connections the worker process held at once, in total and by application_name. */
  maxConnections: number;
  maxConnectionsByName: Record<string, number>;
  rows: number;
  writes: number;
}

const CLOCK_TICKS_PER_SECOND = 100;

/** utime + stime of a process, every thread included, in µs (/proc/<pid>/stat fields 14 and 15). */
function processCpuUs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1_000_000) / CLOCK_TICKS_PER_SECOND;
}

/** write and read system calls of a process so far (/proc/<pid>/io syscw, syscr). */
function processSyscalls(pid: number): { writes: number; reads: number } {
  const io = readFileSync(`/proc/${pid}/io`, 'utf8');
  return { writes: Number(/syscw: (\d+)/.exec(io)?.[1] ?? 0), reads: Number(/syscr: (\d+)/.exec(io)?.[1] ?? 0) };
}

/** Local ports of the process's TCP connections to `serverPort` (its socket inodes in /proc/net/tcp*). */
function clientPorts(pid: number, serverPort: number): number[] {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m !== null) inodes.add(m[1]!);
    } catch {
      // closed meanwhile
    }
  }
  const ports: number[] = [];
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 10 || !inodes.has(f[9]!)) continue;
      const local = parseInt(f[1]!.split(':')[1]!, 16);
      const remote = parseInt(f[2]!.split(':')[1]!, 16);
      if (remote === serverPort) ports.push(local);
    }
  }
  return ports;
}

export async function runOnce(options: RunOptions): Promise<RunResult> {
  const { em, db, variant, events, name } = options;
  const table = `bench_tx_${name}`;
  const prefix = `bench-tx-${name}`;
  const root = options.workerRoot ?? ROOT;
  const serverPort = Number(new URL(options.databaseUrl).port || 5432);
  await db.query(`DROP TABLE IF EXISTS ${table}`);
  await db.query(`CREATE TABLE ${table} (event_id text PRIMARY KEY, subject text NOT NULL, n bigint NOT NULL, writes int NOT NULL DEFAULT 1)`);
  const { head } = await em.consumer();
  await em.append(events, SUBJECTS);
  // BENCH_PROFILE_DIR=dir writes a CPU profile of each worker process there (as bench/worker does).
  const profile = process.env.BENCH_PROFILE_DIR ? ['--cpu-prof', '--cpu-prof-interval', '200', '--cpu-prof-dir', process.env.BENCH_PROFILE_DIR] : [];
  const args = [
    ...profile,
    join(root, 'bin', 'durable-worker.js'),
    'run',
    ...['--base-url', em.url, '--tenant', 'dev-tenant', '--client-id', 'dev-client', '--client-secret', 'dev-secret', '--destination', 'dev-consumer'],
    ...['--handlers', join(root, 'bench', 'transactional', 'handlers', variant)],
    ...['--idempotency', options.databaseUrl, '--idempotency-prefix', prefix, '--dead-letter', `file:${join(options.scratch, `${name}.jsonl`)}`],
    ...['--metrics-port', '0', '--metrics-host', '127.0.0.1', '--log-level', 'info'],
    ...['--workers', '4', '--limit', '100', '--concurrency', '16', '--max-in-progress', String(options.maxInProgress), '--isolation', options.isolation],
  ];
  const child = spawn(process.execPath, args, {
    env: { ...process.env, BENCH_TX_TABLE: table, DATABASE_URL: options.databaseUrl },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  let startedAt: number | undefined;
  let cpuAtStart = 0;
  let syscallsAtStart = { writes: 0, reads: 0 };
  // Backend pid -> its CPU when the run started (0 for a backend that connected later) and when last seen.
  const backends = new Map<number, { start: number; last: number }>();
  const exited = once(child, 'exit');
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    if (startedAt === undefined && (output + chunk).includes('"msg":"worker started"')) {
      startedAt = performance.now();
      cpuAtStart = processCpuUs(child.pid!);
      syscallsAtStart = processSyscalls(child.pid!);
      for (const backend of backends.values()) backend.start = backend.last;
    }
    // Only the tail is kept for an error message: info lines are many.
    output = (output + chunk).slice(-20_000);
  });
  const maxConnectionsByName: Record<string, number> = {};
  let maxConnections = 0;
  let sampling = true;
  const sample = async () => {
    try {
      const ports = clientPorts(child.pid!, serverPort);
      maxConnections = Math.max(maxConnections, ports.length);
      if (ports.length === 0) return;
      const { rows } = await db.query<{ name: string; pid: number }>(
        `SELECT application_name AS name, pid FROM pg_stat_activity WHERE client_port = ANY($1::int[])`,
        [ports],
      );
      const byName: Record<string, number> = {};
      for (const row of rows) {
        byName[row.name] = (byName[row.name] ?? 0) + 1;
        try {
          const cpu = processCpuUs(row.pid);
          const backend = backends.get(row.pid);
          if (backend === undefined) backends.set(row.pid, { start: startedAt === undefined ? cpu : 0, last: cpu });
          else backend.last = cpu;
        } catch {
          // that connection closed meanwhile
        }
      }
      for (const [name, n] of Object.entries(byName)) maxConnectionsByName[name] = Math.max(maxConnectionsByName[name] ?? 0, n);
    } catch {
      // the process ended between two reads
    }
  };
  const sampler = (async () => {
    while (sampling) {
      await sample();
      await sleep(100);
    }
  })();
  try {
    const deadline = Date.now() + 600_000;
    let endedAt: number;
    let cpuAtEnd: number;
    let syscallsAtEnd = { writes: 0, reads: 0 };
    for (;;) {
      if (child.exitCode !== null) throw new Error(`${variant} worker exited ${child.exitCode}:\n${output}`);
      const c = await em.consumer();
      if (c.committed >= head + events && c.leased === 0) {
        endedAt = performance.now();
        cpuAtEnd = processCpuUs(child.pid!);
        syscallsAtEnd = processSyscalls(child.pid!);
        await sample();
        break;
      }
      if (Date.now() > deadline) throw new Error(`${variant}: not drained after 600 s: ${JSON.stringify(c)}\n${output}`);
      await sleep(20);
    }
    if (startedAt === undefined) throw new Error(`${variant}: drained before its 'worker started' line:\n${output}`);
    child.kill('SIGTERM');
    const [code] = (await exited) as [number | null];
    if (code !== 0) throw new Error(`${variant} worker exited ${code} after SIGTERM:\n${output}`);
    const { rows } = await db.query<{ rows: string; writes: string | null }>(`SELECT count(*)::text AS rows, sum(writes)::text AS writes FROM ${table}`);
    const result: RunResult = {
      variant,
      isolation: options.isolation,
      events,
      seconds: (endedAt - startedAt) / 1_000,
      eventsPerSecond: events / ((endedAt - startedAt) / 1_000),
      cpuUsPerEvent: (cpuAtEnd - cpuAtStart) / events,
      serverCpuUsPerEvent: [...backends.values()].reduce((sum, b) => sum + b.last - b.start, 0) / events,
      writesPerEvent: (syscallsAtEnd.writes - syscallsAtStart.writes) / events,
      readsPerEvent: (syscallsAtEnd.reads - syscallsAtStart.reads) / events,
      maxConnections,
      maxConnectionsByName,
      rows: Number(rows[0]!.rows),
      writes: Number(rows[0]!.writes ?? 0),
    };
    if (result.rows !== events || result.writes !== events) {
      throw new Error(
        `${variant} (${options.isolation}): ${result.rows} rows written ${result.writes} times for ${events} events: an event lost or applied twice`,
      );
    }
    return result;
  } finally {
    sampling = false;
    await sampler;
    if (child.exitCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
    await db.query(`DROP TABLE IF EXISTS ${table}`).catch(() => {});
    await db.query(`DELETE FROM durable_worker_idempotency WHERE prefix = $1`, [prefix]).catch(() => {});
  }
}
