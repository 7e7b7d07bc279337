/**
 * What a transactional handler's call costs PostgreSQL and the client at the least, without the
 * worker around it: one event's row written `--calls` times over `--connections` connections, in
 * three shapes, alternating for `--rounds` rounds:
 *   autocommit   the row alone, and one done-mark statement per 100 rows (as the worker writes the
 *                marks of a handler with its separate done mark: one statement per lease)
 *   bare         BEGIN; the row; COMMIT: three round trips and nothing else
 *   transaction  EffectTransactions: begin (settings, lock, done-mark read), the row through
 *                `tx.client`, commit (check and done mark, COMMIT): three round trips, as the worker runs them
 *
 *   DATABASE_URL=postgres://app:app@127.0.0.1:5432/app node --import tsx bench/transactional/bound.ts \
 *     [--calls 3000] [--connections 1] [--rounds 3]
 *
 * Per shape: calls/s, and CPU µs per call of this process (client) and of the backends serving it
 * (server, /proc/<pid>/stat of pg_stat_activity's pids in this database: run it alone there), each
 * as user + system time: system time is where round trips cost (socket writes and reads, wake-ups),
 * user time where statements and their results do.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { PostgresIdempotencyStore } from '../../src/idempotency/postgres.js';
import { EffectTransactions } from '../../src/idempotency/postgres-transactions.js';

const { values } = parseArgs({
  options: { calls: { type: 'string', default: '3000' }, connections: { type: 'string', default: '1' }, rounds: { type: 'string', default: '3' } },
});
const url = process.env.DATABASE_URL;
if (url === undefined || url === '') {
  console.error('bench/transactional/bound needs DATABASE_URL');
  process.exit(2);
}
const calls = Number(values.calls);
const connections = Number(values.connections);
const rounds = Number(values.rounds);

interface Cpu {
  user: number;
  system: number;
}

/** utime and stime of a process in µs (/proc/<pid>/stat fields 14 and 15, 100 ticks a second). */
const cpuUs = (pid: number): Cpu => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { user: Number(fields[11]) * 10_000, system: Number(fields[12]) * 10_000 };
};
const minus = (a: Cpu, b: Cpu | undefined): Cpu => ({ user: a.user - (b?.user ?? 0), system: a.system - (b?.system ?? 0) });

const prefix = `bench-bound-${randomUUID()}`;
const table = `bench_bound_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
const UPSERT = `INSERT INTO ${table} (event_id, n) VALUES ($1, 1) ON CONFLICT (event_id) DO UPDATE SET n = ${table}.n + 1`;
const probe = new pg.Pool({ connectionString: url, max: 1, application_name: 'bench bound probe' });
const rows = new pg.Pool({ connectionString: url, max: connections, application_name: 'bench bound' });
const store = await PostgresIdempotencyStore.open({ url, prefix, doneTtlMs: 3_600_000, poolSize: 1 });
const transactions = await EffectTransactions.open({ url, prefix, doneTtlMs: 3_600_000, poolSize: connections });
await probe.query(`CREATE TABLE ${table} (event_id text PRIMARY KEY, n int NOT NULL)`);

/** CPU of the backends of this database but the probe's, by pid. */
async function serverCpu(): Promise<Map<number, Cpu>> {
  const { rows: backends } = await probe.query<{ pid: number }>(
    'SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
  );
  const cpu = new Map<number, Cpu>();
  for (const { pid } of backends) {
    try {
      cpu.set(pid, cpuUs(pid));
    } catch {
      // gone meanwhile
    }
  }
  return cpu;
}

type Shape = (key: string, i: number) => Promise<unknown>;
const shapes: Record<string, Shape> = {
  autocommit: async (key, i) => {
    await rows.query(UPSERT, [key]);
    if (i % 100 === 99) await store.markDone(Array.from({ length: 100 }, (_, k) => `${key}:${k}`));
  },
  bare: async (key) => {
    const client = await rows.connect();
    try {
      await client.query('BEGIN');
      await client.query(UPSERT, [key]);
      await client.query('COMMIT');
    } finally {
      client.release();
    }
  },
  transaction: async (key) => {
    const tx = await transactions.begin([key], { serverTimeoutMs: 60_000 });
    await tx.client.query(UPSERT, [key]);
    await tx.commit([key]);
  },
};

const results = new Map<string, { rate: number; client: Cpu; server: Cpu }[]>();
let run = 0;
for (let round = 0; round < rounds; round++) {
  const names = Object.keys(shapes);
  for (const name of round % 2 === 0 ? names : names.reverse()) {
    const shape = shapes[name] as Shape;
    run++;
    const before = await serverCpu();
    const clientBefore = cpuUs(process.pid);
    const startedAt = performance.now();
    await Promise.all(
      Array.from({ length: connections }, async (_, c) => {
        for (let i = c; i < calls; i += connections) await shape(`${run}:${i}`, i);
      }),
    );
    const seconds = (performance.now() - startedAt) / 1_000;
    const client = minus(cpuUs(process.pid), clientBefore);
    const server = { user: 0, system: 0 };
    for (const [pid, cpu] of await serverCpu()) {
      const used = minus(cpu, before.get(pid));
      server.user += used.user;
      server.system += used.system;
    }
    const perCall = (cpu: Cpu): Cpu => ({ user: cpu.user / calls, system: cpu.system / calls });
    const list = results.get(name) ?? [];
    list.push({ rate: calls / seconds, client: perCall(client), server: perCall(server) });
    results.set(name, list);
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const range = (xs: number[]) => `${Math.round(Math.min(...xs))}–${Math.round(Math.max(...xs))}`;
console.log(`bench/transactional/bound: ${calls} calls, ${connections} connection(s), ${rounds} rounds alternating, node ${process.version}`);
console.log('| shape | calls/s | client CPU µs/call: user + system | server CPU µs/call: user + system | client + server |');
console.log('|---|---|---|---|---|');
const cell = (xs: number[]) => `${Math.round(median(xs))} (${range(xs)})`;
for (const [name, list] of results) {
  const client = `${cell(list.map((r) => r.client.user))} + ${cell(list.map((r) => r.client.system))}`;
  const server = `${cell(list.map((r) => r.server.user))} + ${cell(list.map((r) => r.server.system))}`;
  const total = list.map((r) => r.client.user + r.client.system + r.server.user + r.server.system);
  console.log(`| ${name} | ${cell(list.map((r) => r.rate))} | ${client} | ${server} | ${cell(total)} |`);
}
await probe.query(`DROP TABLE ${table}`);
await probe.query('DELETE FROM durable_worker_idempotency WHERE prefix = $1', [prefix]);
await transactions.close();
await store.close();
await rows.end();
await probe.end();
