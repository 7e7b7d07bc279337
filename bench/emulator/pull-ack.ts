/**
 * Emulator pull+ack throughput: N concurrent loops (distinct workerIds) pull a batch and ack it
 * `ok`, over loopback with undici, for a fixed duration.
 *
 *   node --import tsx bench/emulator/pull-ack.ts [--seconds 3] [--loops 8] [--limit 100] [--in-process]
 *
 * The run must end before the prefill (BENCH_PREFILL_EVENTS, default 1,000,000) is drained: at
 * ~3,000 round trips/s of 100 events that is ~3 s; after that the loops only get 204 (see `empty`).
 *
 * By default the emulator runs in a child process (client and server each get one of the two
 * cores); --in-process shares one event loop. Prints round trips/s (pull+ack pairs) and events/s.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import { parseArgs } from 'node:util';
import { loadavg } from 'node:os';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '3' },
    loops: { type: 'string', default: '8' },
    limit: { type: 'string', default: '100' },
    'in-process': { type: 'boolean', default: false },
    /** light: read the whole body, take leaseId/generation from its head; full: JSON.parse it all. */
    parse: { type: 'string', default: 'light' },
  },
});
const seconds = Number(values.seconds);
const loops = Number(values.loops);
const limit = Number(values.limit);
const fullParse = values.parse === 'full';

/** The emulator writes leaseId and generation first, so a light client need not parse 100 events. */
function leaseOf(text: string): { leaseId: string; generation: number; count: number } {
  if (fullParse) {
    const batch = JSON.parse(text) as { leaseId: string; generation: number; events: unknown[] };
    return { leaseId: batch.leaseId, generation: batch.generation, count: batch.events.length };
  }
  const match = /^\{"leaseId":("(?:[^"\\]|\\.)*"),"generation":(\d+)/.exec(text);
  if (!match) throw new Error(`unexpected lease batch: ${text.slice(0, 100)}`);
  let count = 0;
  for (let at = text.indexOf('"specversion"'); at >= 0; at = text.indexOf('"specversion"', at + 1)) count++;
  return { leaseId: JSON.parse(match[1]!) as string, generation: Number(match[2]), count };
}

interface BenchServer {
  url: string;
  /** Events appended before the run, time taken and resident memory after. */
  prefill?: string;
  /** The measured run starts now. */
  mark(): void;
  /** Stops the server; resolves with its CPU time during the run, in µs. */
  stop(): Promise<number>;
}

async function startServer(): Promise<BenchServer> {
  if (values['in-process']) {
    const { startEmulator } = await import('../../src/emulator/index.js');
    const em = await startEmulator({ port: 0 });
    const prefill = Number(process.env.BENCH_PREFILL_EVENTS ?? 1_000_000);
    for (let done = 0; done < prefill; done += 10_000) {
      em.appendEvents(
        'dev-tenant',
        Array.from({ length: 10_000 }, (_, i) => ({ type: 'bench.event', subject: `s-${done + i}`, data: { n: done + i, payload: 'x'.repeat(64) } })),
      );
    }
    let cpu = process.cpuUsage();
    return {
      url: em.url,
      mark: () => void (cpu = process.cpuUsage()),
      stop: async () => {
        const used = process.cpuUsage(cpu);
        await em.close();
        return used.user + used.system; // client included: one process
      },
    };
  }
  // BENCH_PROFILE_DIR=dir writes a CPU profile of the emulator process there.
  const profile = process.env.BENCH_PROFILE_DIR ? ['--cpu-prof', '--cpu-prof-dir', process.env.BENCH_PROFILE_DIR] : [];
  const child = spawn(process.execPath, [...profile, '--import', 'tsx', fileURLToPath(new URL('./emulator-child.ts', import.meta.url))], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  child.stdout.on('data', (chunk) => void (output += String(chunk)));
  const exited = once(child, 'exit');
  const deadline = Date.now() + 30_000;
  while (!/READY (\S+)/.test(output)) {
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`emulator child did not start: ${output}`);
    await sleep(20);
  }
  return {
    url: /READY (\S+)/.exec(output)![1]!,
    prefill: /PREFILL (\d+) (\d+) (\d+)/
      .exec(output)
      ?.slice(1)
      .reduce((_, __, i, m) => `${m[0]} events in ${m[1]} ms, rss ${m[2]} MiB`, ''),
    mark: () => void child.kill('SIGUSR2'),
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
      return Number(/CPU_US (\d+)/.exec(output)?.[1] ?? NaN);
    },
  };
}

async function main(): Promise<void> {
  const server = await startServer();
  const pool = new Pool(server.url, { connections: loops, pipelining: 1 });
  const tokenRes = await pool.request({
    method: 'POST',
    path: '/oauth2/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: 'grant_type=client_credentials&client_id=dev-client&client_secret=dev-secret&audience=dev-tenant&scope=read:events',
  });
  const { access_token: token } = (await tokenRes.body.json()) as { access_token: string };
  const headers = { authorization: `Bearer ${token}` };
  const ackHeaders = { ...headers, 'content-type': 'application/json' };

  let roundTrips = 0;
  let events = 0;
  let empty = 0;
  let throttled = 0;
  const latenciesMs: number[] = [];
  const deadline = performance.now() + seconds * 1000;

  async function loop(index: number): Promise<void> {
    const path = `/v1/event-destinations/dev-consumer/pull?limit=${limit}&visibility=60&workerId=bench-${index}`;
    while (performance.now() < deadline) {
      const started = performance.now();
      const pulled = await pool.request({ method: 'POST', path, headers });
      if (pulled.statusCode === 204) {
        await pulled.body.dump();
        empty++;
        await sleep(5);
        continue;
      }
      if (pulled.statusCode === 429) {
        await pulled.body.dump();
        throttled++;
        await sleep(100);
        continue;
      }
      const batch = leaseOf(await pulled.body.text());
      const acked = await pool.request({
        method: 'POST',
        path: '/v1/event-destinations/dev-consumer/acknowledge',
        headers: ackHeaders,
        body: JSON.stringify({ leaseId: batch.leaseId, generation: batch.generation, status: 'ok' }),
      });
      const answer = (await acked.body.json()) as { status: string };
      if (answer.status !== 'committed') throw new Error(`unexpected ack status ${answer.status}`);
      roundTrips++;
      events += batch.count;
      latenciesMs.push(performance.now() - started);
    }
  }

  server.mark();
  const clientCpu = process.cpuUsage();
  const started = performance.now();
  await Promise.all(Array.from({ length: loops }, (_, i) => loop(i)));
  const elapsedSeconds = (performance.now() - started) / 1000;
  const clientUsed = process.cpuUsage(clientCpu);
  await pool.close();
  const serverCpuUs = await server.stop();

  latenciesMs.sort((a, b) => a - b);
  const pct = (p: number) => latenciesMs[Math.min(latenciesMs.length - 1, Math.floor(p * latenciesMs.length))]?.toFixed(2);
  console.log(
    JSON.stringify({
      mode: values['in-process'] ? 'in-process' : 'child-process',
      parse: fullParse ? 'full' : 'light',
      prefill: server.prefill,
      loops,
      limit,
      seconds: Number(elapsedSeconds.toFixed(2)),
      roundTripsPerSecond: Math.round(roundTrips / elapsedSeconds),
      eventsPerSecond: Math.round(events / elapsedSeconds),
      pullAckLatencyMs: { p50: pct(0.5), p99: pct(0.99) },
      empty,
      throttled,
      // CPU per pull+ack round trip: independent of what else loads the machine.
      serverCpuUsPerRoundTrip: Math.round(serverCpuUs / Math.max(1, roundTrips)),
      clientCpuUsPerRoundTrip: Math.round((clientUsed.user + clientUsed.system) / Math.max(1, roundTrips)),
      loadAverage1m: Number(loadavg()[0]!.toFixed(2)),
    }),
  );
}

await main();
