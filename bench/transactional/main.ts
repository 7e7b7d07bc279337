/**
 * Transactional handlers against the same handlers with the worker's separate done mark: events/s,
 * CPU per event of the worker process, and the PostgreSQL connections it holds.
 *
 *   DATABASE_URL=postgres://app:app@127.0.0.1:5432/app npm run bench:transactional -- \
 *     [--events 20000] [--repeat 3] [--isolation none,thread] [--variants plain,tx,plain-batch,tx-batch] \
 *     [--max-in-progress 64] [--latency 0] [--worker-root <checkout>]
 *
 * Four handlers write the same row per event into a table of their own (bench/transactional/rows.mjs):
 *   plain        defineHandler, one upsert per event on a pool of its own; done mark written by the worker
 *   tx           the same with `transactional: true`, through ctx.tx: upsert and done mark in one transaction
 *   plain-batch  defineBatchHandler (at most 100 events a call), one multi-row upsert per call
 *   tx-batch     the same with `transactional: true`
 * Every run is a fresh `durable-worker run` (bench/transactional/run.ts), `--idempotency` the same
 * PostgreSQL, `--workers 4 --limit 100 --concurrency 16`, on `--events` events whose subjects cycle
 * over 50; the variants alternate in each round (reversed every other round), so that a machine
 * getting busier does not favour one. `--latency` ms is added to every pull and ack by the emulator.
 * `--worker-root` runs another checkout's bin (its `dist/` built, this folder copied into it): the
 * same figures for a baseline build, e.g. the plain variants before transactional handlers existed.
 * BENCH_PROFILE_DIR=dir writes a CPU profile of each worker process there.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { EmulatorChild } from '../worker/emulator.js';
import { formatRatios, formatResults } from './report.js';
import { runOnce, VARIANTS, type Isolation, type RunResult, type Variant } from './run.js';

const { values } = parseArgs({
  options: {
    events: { type: 'string', default: '20000' },
    repeat: { type: 'string', default: '3' },
    isolation: { type: 'string', default: 'none' },
    variants: { type: 'string', default: VARIANTS.join(',') },
    'max-in-progress': { type: 'string', default: '64' },
    latency: { type: 'string', default: '0' },
    'worker-root': { type: 'string' },
  },
});
const DATABASE_URL = process.env.DATABASE_URL;
if (DATABASE_URL === undefined || DATABASE_URL === '') {
  console.error('bench/transactional needs DATABASE_URL (e.g. postgres://app:app@127.0.0.1:5432/app)');
  process.exit(2);
}
const events = Number(values.events);
const repeat = Math.max(1, Number(values.repeat));
const isolations = values.isolation!.split(',') as Isolation[];
const variants = values.variants!.split(',') as Variant[];
for (const v of variants) if (!VARIANTS.includes(v)) throw new Error(`--variants: unknown ${v} (known: ${VARIANTS.join(', ')})`);
const latencyMs = Number(values.latency);

const em = await EmulatorChild.start();
const db = new pg.Pool({ connectionString: DATABASE_URL, max: 2, application_name: 'bench transactional' });
const scratch = mkdtempSync(join(tmpdir(), 'dw-bench-tx-'));
const suffix = `${process.pid}_${Date.now().toString(36)}`;
try {
  console.log(
    `bench/transactional: ${events} events over 50 subjects, ${repeat} round(s), --isolation ${isolations.join(',')}, --max-in-progress ${values['max-in-progress']}, latency ${latencyMs} ms, ` +
      `node ${process.version}, ${cpus().length} cores, load ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}${values['worker-root'] ? `, worker from ${values['worker-root']}` : ''}`,
  );
  if (latencyMs > 0) await em.setLatency(latencyMs);
  const results: RunResult[] = [];
  for (const isolation of isolations) {
    for (let round = 1; round <= repeat; round++) {
      const order = round % 2 === 1 ? variants : [...variants].reverse();
      for (const variant of order) {
        const r = await runOnce({
          em,
          db,
          databaseUrl: DATABASE_URL,
          variant,
          isolation,
          events,
          maxInProgress: Number(values['max-in-progress']),
          name: `${variant.replace('-', '_')}_${isolation}_${round}_${suffix}`,
          scratch,
          ...(values['worker-root'] ? { workerRoot: values['worker-root'] } : {}),
        });
        results.push({ ...r, round });
        const names = Object.entries(r.maxConnectionsByName)
          .map(([n, c]) => `${n}: ${c}`)
          .join(', ');
        console.log(
          `${isolation} round ${round} ${variant.padEnd(11)} ${r.seconds.toFixed(2)} s = ${Math.round(r.eventsPerSecond)} events/s, ${r.cpuUsPerEvent.toFixed(1)} µs CPU/event, server ${r.serverCpuUsPerEvent.toFixed(1)} µs, ` +
            `syscalls/event ${r.writesPerEvent.toFixed(2)} w ${r.readsPerEvent.toFixed(2)} r, ` +
            `connections ${r.maxConnections} (${names}), rows ${r.rows}, writes ${r.writes}`,
        );
      }
    }
  }
  console.log(
    `\n${formatResults(results)}\n\n${formatRatios(results)}\nload ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
} finally {
  await db.end();
  await em.stop();
  rmSync(scratch, { recursive: true, force: true });
}
