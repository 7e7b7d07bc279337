/**
 * One worker process of bench/worker: `startWorker` with the config given as JSON in argv[2].
 * Prints `READY` once started (idle, pulling), `RSS <events> <MiB>` every BENCH_RSS_EVERY events,
 * and on SIGTERM, after a clean close, `STATS <json>`: events done, the wall-clock span from its
 * first leased batch to its last committed ack, and the process CPU time (all threads) from that first batch to the SIGTERM.
 */
import pino from 'pino';
import type { WorkerConfig } from '../../src/config/types.js';

// The compiled worker (`npm run build`), as the bin runs it: sources through tsx cost more per event
// (esbuild's name-keeping helper on every closure, loader hooks in the worker threads).
const { startWorker } = (await import(new URL('../../dist/worker/start.js', import.meta.url).href)) as typeof import('../../src/worker/start.js');

const config = JSON.parse(process.argv[2] ?? '{}') as WorkerConfig;
const rssEvery = Number(process.env.BENCH_RSS_EVERY ?? 0);

const worker = await startWorker(config, {
  logger: pino({ level: 'warn' }, pino.destination(2)),
  // Short idle waits: the run starts when the parent appends, not up to 2 s later.
  timings: { idleMinMs: 5, idleMaxMs: 20 },
  healthServer: false,
});

let events = 0;
let firstPullMs: number | undefined;
let lastAckMs: number | undefined;
let cpuAtFirst: NodeJS.CpuUsage | undefined;
worker.events.on('batch:pulled', () => {
  if (firstPullMs !== undefined) return;
  firstPullMs = Date.now();
  cpuAtFirst = process.cpuUsage();
});
worker.events.on('event:done', (e) => {
  if (e.outcome !== 'ok' && e.outcome !== 'duplicate') return;
  events++;
  if (rssEvery > 0 && events % rssEvery === 0) process.stdout.write(`RSS ${events} ${(process.memoryUsage().rss / 1048576).toFixed(1)}\n`);
});
worker.events.on('ack:done', (e) => {
  if (e.status !== 'committed') return;
  lastAckMs = Date.now();
});

process.on('SIGTERM', () => {
  // CPU from the first batch to now: the run plus the few idle pulls until the parent saw the drain.
  const used = process.cpuUsage(cpuAtFirst);
  const cpuUs = used.user + used.system;
  void worker.close().then(() => {
    const stats = { events, firstPullMs, lastAckMs, cpuUs, rssMiB: Number((process.memoryUsage().rss / 1048576).toFixed(1)) };
    process.stdout.write(`STATS ${JSON.stringify(stats)}\n`, () => process.exit(0));
  });
});
process.stdout.write('READY\n');
