/**
 * Soak: 1,000,000 events through one in-process worker with a no-op handler, against the
 * emulator in a child process (bench/emulator/emulator-child.ts, backlog topped up), sampling RSS,
 * heap (after a forced GC) and active handles. Reports growth after warm-up (target: flat within 10 %).
 *
 *   npm run soak -- [--events 1000000] [--workers 4] [--limit 100] [--isolation none|thread]
 *                   [--store memory|sqlite:PATH|redis://...] [--sample-every 50000]
 */
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { startWorker } from '../../src/worker/start.js';

const { values } = parseArgs({
  options: {
    events: { type: 'string', default: '1000000' },
    workers: { type: 'string', default: '4' },
    limit: { type: 'string', default: '100' },
    isolation: { type: 'string', default: 'none' },
    store: { type: 'string', default: 'memory' },
    'sample-every': { type: 'string', default: '50000' },
  },
});
const target = Number(values.events);
const sampleEvery = Number(values['sample-every']);
const isolation = values.isolation === 'thread' ? 'thread' : 'none';
const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) process.stderr.write('soak: run with node --expose-gc for heap figures after GC (npm run soak does)\n');

const here = fileURLToPath(new URL('.', import.meta.url));
const child = spawn(process.execPath, ['--import', 'tsx', join(here, '../emulator/emulator-child.ts')], {
  env: { ...process.env, BENCH_PREFILL_EVENTS: '200000', BENCH_TOP_UP: '1' },
  stdio: ['ignore', 'pipe', 'inherit'],
});
const url = await new Promise<string>((resolve, reject) => {
  createInterface({ input: child.stdout! }).on('line', (line) => {
    if (line.startsWith('READY ')) resolve(line.slice(6));
  });
  child.once('exit', (code) => reject(new Error(`emulator child exited ${code}`)));
});

interface Sample {
  events: number;
  seconds: number;
  rssMiB: number;
  heapMiB: number;
  handles: number;
}
const mib = (bytes: number) => Math.round((bytes / 1048576) * 10) / 10;
const samples: Sample[] = [];
const started = Date.now();
let done = 0;
let nextSample = sampleEvery;

const dir = mkdtempSync(join(tmpdir(), 'dw-soak-'));
const worker = await startWorker(
  {
    baseUrl: url,
    authUrl: url,
    destination: 'dev-consumer',
    tenant: 'dev-tenant',
    clientId: 'dev-client',
    clientSecret: 'dev-secret',
    handlersDir: join(here, 'handlers'),
    workers: Number(values.workers),
    workerIdPrefix: 'soak',
    limit: Number(values.limit),
    visibilitySeconds: 60,
    concurrency: 16,
    maxAttempts: 5,
    idempotencyUrl: values.store,
    idempotencyPrefix: `soak-${Date.now()}`,
    idempotencyTtlMs: 600_000,
    deadLetterUrl: `file:${join(dir, 'dead-letter.jsonl')}`,
    metricsPort: 0,
    metricsHost: '127.0.0.1',
    exitWhenIdle: false,
    logLevel: 'warn',
    isolation,
    shutdownTimeoutSeconds: 10,
    forwardMode: 'binary',
  },
  { logger: pino({ level: 'warn' }) },
);

const finished = new Promise<void>((resolve) => {
  worker.events.on('run:done', (e) => {
    if (e.outcome !== 'ok') return;
    done++;
    if (done >= nextSample) {
      nextSample += sampleEvery;
      // Sampled off the hot path: a forced GC so heap figures compare live data, not garbage.
      setImmediate(() => {
        gc?.();
        const m = process.memoryUsage();
        const s: Sample = {
          events: done,
          seconds: (Date.now() - started) / 1000,
          rssMiB: mib(m.rss),
          heapMiB: mib(m.heapUsed),
          handles: process.getActiveResourcesInfo().length,
        };
        samples.push(s);
        process.stdout.write(
          `${String(s.events).padStart(8)} events  ${s.seconds.toFixed(0).padStart(4)} s  rss ${s.rssMiB} MiB  heap ${s.heapMiB} MiB  handles ${s.handles}\n`,
        );
      });
    }
    if (done >= target) resolve();
  });
});
await finished;
await new Promise((resolve) => setImmediate(resolve));
await worker.close();
child.kill('SIGTERM');

// Warm-up: the first 20 % of the run (JIT, pools, LRU filling). Growth = last sample vs end of warm-up.
const warm = samples.find((s) => s.events >= target * 0.2) ?? samples[0];
const last = samples.at(-1);
if (warm !== undefined && last !== undefined) {
  const growth = (a: number, b: number) => `${(((b - a) / a) * 100).toFixed(1)} %`;
  const seconds = (Date.now() - started) / 1000;
  process.stdout.write(
    `\nsoak: ${done} events in ${seconds.toFixed(0)} s (${Math.round(done / seconds)} ev/s), isolation ${isolation}, store ${values.store}\n` +
      `after warm-up (${warm.events} events): rss ${warm.rssMiB} -> ${last.rssMiB} MiB (${growth(warm.rssMiB, last.rssMiB)}), ` +
      `heap ${warm.heapMiB} -> ${last.heapMiB} MiB (${growth(warm.heapMiB, last.heapMiB)}), handles ${warm.handles} -> ${last.handles}\n` +
      `max over the run after warm-up: rss ${Math.max(...samples.filter((s) => s.events >= warm.events).map((s) => s.rssMiB))} MiB, heap ${Math.max(...samples.filter((s) => s.events >= warm.events).map((s) => s.heapMiB))} MiB\n`,
  );
}
