/**
 * examples/sync-to-postgres, per-event against batch handler: rows/s into a real PostgreSQL from the
 * same events, in one run (the target it prints: the batch handler at least 5x the per-event one).
 *
 *   DATABASE_URL=postgres://app:app@127.0.0.1:5432/app npm run bench:sync -- [--events 50000] [--repeat 3] [--isolation thread|none] [--max-in-progress 400]
 *
 * One emulator (in this process) holds one stream of `--events` source_entry.updated events (typed
 * ingest of as many entries, 1,000 per request); every measured run drains a durable consumer of its
 * own created before the ingest, so each sees every event. Each run is a FRESH worker process (`run
 * --exit-when-idle`, the compiled bin, the memory store), in a table of its own; the kinds alternate
 * (per-event, batch, per-event, ...) so that noise on a shared machine hits both. Reported per run:
 * wall time from spawn to exit and rows/s over it; rows/s from the worker's 'worker started' log
 * line to its exit (what remains once the process is up: thread start, setup, the first pull...);
 * and rows/s from the first row written to the last (the table's synced_at: the steady rate). The
 * ratios are taken within each pair.
 *
 * per-event: bench/sync-to-postgres/per-event/upsert-entry.ts, the example's handler before it
 *   became a batch handler (one INSERT ... ON CONFLICT per event, a pool of 4 per thread).
 * batch: examples/sync-to-postgres/handlers/upsert-entries.ts (one multi-row upsert per call, at
 *   most 100 events, a pool of 4 per thread opened in setup).
 * Both run with the same flags: --limit 100 --workers 4 --max-in-progress 400 (four leases' worth of
 * events in progress: several calls at once; the per-event handler's 8 connections stay busy either way).
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import pino from 'pino';
import { createClient } from '../../src/client/index.js';
import { DEV_DEFAULTS, startEmulator } from '../../src/emulator/index.js';

const { values } = parseArgs({
  options: {
    events: { type: 'string', default: '50000' },
    repeat: { type: 'string', default: '3' },
    isolation: { type: 'string', default: 'thread' },
    'max-in-progress': { type: 'string', default: '400' },
  },
});
const EVENTS = Number(values.events);
const REPEAT = Math.max(1, Number(values.repeat));
const DATABASE_URL = process.env.DATABASE_URL;
if (DATABASE_URL === undefined) {
  console.error('bench/sync-to-postgres needs DATABASE_URL (e.g. postgres://app:app@127.0.0.1:5432/app)');
  process.exit(2);
}
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const KINDS = {
  'per-event': fileURLToPath(new URL('./per-event', import.meta.url)),
  batch: join(ROOT, 'examples', 'sync-to-postgres', 'handlers'),
} as const;
type Kind = keyof typeof KINDS;

interface Run {
  kind: Kind;
  round: number;
  wallMs: number;
  upMs: number;
  /** From the first row written to the last (synced_at, the writing transactions' start): the steady rate. */
  writingMs: number;
  rows: number;
}

const { tenant, clientId, clientSecret } = DEV_DEFAULTS;
const emulator = await startEmulator({ port: 0, logger: pino({ level: 'silent' }) });
const db = new pg.Pool({ connectionString: DATABASE_URL, max: 2 });
const suffix = `${process.pid}_${Date.now().toString(36)}`;
const scratch = mkdtempSync(join(tmpdir(), 'dw-bench-sync-'));
const tables: string[] = [];

/** A durable consumer of its own, at the head of the stream: it sees everything ingested after. */
async function createConsumer(id: string): Promise<void> {
  const response = await fetch(`${emulator.url}/_emulator/tenants/${tenant}/event-destinations`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ id, type: 'DURABLE_CONSUMER' }),
  });
  if (response.status !== 201) throw new Error(`creating consumer ${id}: ${response.status} ${await response.text()}`);
}

async function ingest(count: number): Promise<void> {
  const client = createClient({ baseUrl: emulator.url, tenant, clientId, clientSecret });
  try {
    for (let first = 0; first < count; first += 1_000) {
      const entries = [];
      for (let i = first; i < Math.min(count, first + 1_000); i++) {
        entries.push({
          id: `entry-${i}`,
          properties: [
            { id: 'name', value: `Product ${i}` },
            { id: 'price', value: (i % 1_000) + 0.5 },
            { id: 'stock', value: i % 37 },
          ],
        });
      }
      await client.ingest('bench-products', { entries });
    }
  } finally {
    await client.close();
  }
}

/** Polls until the emulator has emitted every event of the ingest (it is asynchronous after 202). */
async function untilEmitted(count: number): Promise<void> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const state = (await (await fetch(`${emulator.url}/_emulator/state`)).json()) as {
      tenants: Array<{ id: string; consumers: Array<{ id: string; head: string | null }> }>;
    };
    const head = Number(state.tenants.find((t) => t.id === tenant)?.consumers[0]?.head ?? 0);
    if (head >= count) return;
    if (Date.now() > deadline) throw new Error(`the emulator emitted ${head} of ${count} events`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function runWorker(kind: Kind, round: number): Promise<Run> {
  const table = `bench_sync_${kind.replace('-', '_')}_${round}_${suffix}`;
  tables.push(table);
  const args = [
    join(ROOT, 'bin', 'durable-worker.js'),
    'run',
    ...['--base-url', emulator.url, '--tenant', tenant, '--client-id', clientId, '--client-secret', clientSecret],
    ...['--destination', `bench-${kind}-${round}`, '--handlers', KINDS[kind], '--exit-when-idle'],
    ...['--idempotency', 'memory', '--dead-letter', `file:${join(scratch, `${table}.jsonl`)}`, '--metrics-port', '0', '--metrics-host', '127.0.0.1'],
    ...['--limit', '100', '--workers', '4', '--max-in-progress', values['max-in-progress']!, '--isolation', values.isolation!, '--log-level', 'info'],
  ];
  const startedAt = performance.now();
  let upAt: number | undefined;
  let output = '';
  const child = spawn(process.execPath, args, { env: { ...process.env, SYNC_TABLE: table, DATABASE_URL }, stdio: ['ignore', 'pipe', 'inherit'] });
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    output += chunk;
    if (upAt === undefined && output.includes('"msg":"worker started"')) upAt = performance.now();
  });
  const [code] = (await once(child, 'exit')) as [number | null];
  const endedAt = performance.now();
  if (code !== 0) throw new Error(`${kind} worker exited ${code}:\n${output.slice(-2_000)}`);
  const { rows } = await db.query<{ count: string; ms: number }>(
    `SELECT count(*)::text AS count, extract(epoch FROM max(synced_at) - min(synced_at)) * 1000 AS ms FROM ${table}`,
  );
  return {
    kind,
    round,
    wallMs: endedAt - startedAt,
    upMs: endedAt - (upAt ?? startedAt),
    writingMs: Number(rows[0]?.ms ?? 0),
    rows: Number(rows[0]?.count ?? 0),
  };
}

const rate = (rows: number, ms: number) => Math.round(rows / (ms / 1_000));

try {
  console.log(
    `bench/sync-to-postgres: ${EVENTS} events, ${REPEAT} round(s), --isolation ${values.isolation}, node ${process.version}, ${cpus().length} cores, load ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  for (let round = 1; round <= REPEAT; round++) for (const kind of Object.keys(KINDS) as Kind[]) await createConsumer(`bench-${kind}-${round}`);
  await ingest(EVENTS);
  await untilEmitted(EVENTS);
  const runs: Run[] = [];
  for (let round = 1; round <= REPEAT; round++) {
    // Alternate which kind goes first, so that a machine getting busier does not favour one.
    const order: Kind[] = round % 2 === 1 ? ['per-event', 'batch'] : ['batch', 'per-event'];
    for (const kind of order) {
      const run = await runWorker(kind, round);
      if (run.rows !== EVENTS) throw new Error(`${kind} round ${round}: ${run.rows} rows in its table, expected ${EVENTS}`);
      runs.push(run);
      console.log(
        `round ${round} ${kind.padEnd(9)}  wall ${(run.wallMs / 1_000).toFixed(2)} s = ${rate(run.rows, run.wallMs)} rows/s   from 'worker started' ${(run.upMs / 1_000).toFixed(2)} s = ${rate(run.rows, run.upMs)} rows/s   first to last row ${(run.writingMs / 1_000).toFixed(2)} s = ${rate(run.rows, run.writingMs)} rows/s`,
      );
    }
    const [a, b] = ['per-event', 'batch'].map((k) => runs.find((r) => r.round === round && r.kind === k)!);
    console.log(
      `round ${round} batch / per-event: wall ${(a!.wallMs / b!.wallMs).toFixed(1)}x, from 'worker started' ${(a!.upMs / b!.upMs).toFixed(1)}x, first to last row ${(a!.writingMs / b!.writingMs).toFixed(1)}x`,
    );
  }
  const median = (xs: number[]) => xs.sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
  const ratios = (key: 'wallMs' | 'upMs' | 'writingMs') =>
    median(
      Array.from(
        { length: REPEAT },
        (_, i) => runs.find((r) => r.round === i + 1 && r.kind === 'per-event')![key] / runs.find((r) => r.round === i + 1 && r.kind === 'batch')![key],
      ),
    );
  console.log(
    `median batch / per-event: wall ${ratios('wallMs').toFixed(1)}x, from 'worker started' ${ratios('upMs').toFixed(1)}x, first to last row ${ratios('writingMs').toFixed(1)}x (target >= 5x)`,
  );
} finally {
  for (const table of tables) await db.query(`DROP TABLE IF EXISTS ${table}`).catch(() => {});
  await db.end();
  await emulator.close();
  rmSync(scratch, { recursive: true, force: true });
}
