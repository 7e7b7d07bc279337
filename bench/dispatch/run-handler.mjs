/**
 * What one handler run costs the process that runs it, apart from the handler: CPU µs and bytes
 * allocated per `runHandler` call (src/dispatch/run-handler.ts, the code behind both isolations)
 * with a no-op async handler, 100 runs in flight at once on one batch signal and lease deadline, as
 * a batch's runs are.
 *
 *   npm run bench:dispatch [-- --rounds 5000]
 *
 * Runs the compiled code in dist/ (`npm run bench:dispatch` builds first): through tsx, esbuild's
 * name-keeping helper would add its own cost to every closure created per run. Bytes come from
 * V8's sampling heap profiler with collected objects kept (every allocation, not only survivors).
 */
import { existsSync } from 'node:fs';
import { Session } from 'node:inspector';
import { parseArgs } from 'node:util';

const compiled = new URL('../../dist/dispatch/run-handler.js', import.meta.url);
if (!existsSync(compiled)) {
  console.error('bench/dispatch runs the compiled code: run `npm run build` first (npm run bench:dispatch does)');
  process.exit(2);
}
const { runHandler } = await import(compiled.href);
const { values } = parseArgs({ options: { rounds: { type: 'string', default: '5000' } } });
const ROUNDS = Number(values.rounds);
const IN_FLIGHT = 100;

const handler = { name: 'noop', types: ['*'], handle: async () => {} };
const batchSignal = new AbortController().signal;
const deadlineMs = Date.now() + 600_000;
const jobContext = { attempt: 1, generation: 1, workerId: 'w-0', leaseId: 'l-1', leaseDeadlineMs: deadlineMs };
const jobs = Array.from({ length: IN_FLIGHT }, (_, i) => ({ handler: 'noop', event: { id: `e-${i}`, type: 't', subject: `s-${i}` }, ctx: jobContext }));
const options = { signal: batchSignal, logger: () => ({}) };

async function run(rounds) {
  const runs = new Array(IN_FLIGHT);
  for (let r = 0; r < rounds; r++) {
    for (let i = 0; i < IN_FLIGHT; i++) runs[i] = runHandler(handler, jobs[i], options);
    await Promise.all(runs);
  }
}

/** The same loop around a bare `handle()` call: what the harness itself costs. */
async function baseline(rounds) {
  const runs = new Array(IN_FLIGHT);
  for (let r = 0; r < rounds; r++) {
    for (let i = 0; i < IN_FLIGHT; i++) runs[i] = handler.handle(jobs[i].event, jobContext);
    await Promise.all(runs);
  }
}

async function cpuMicrosPerRun(body) {
  const before = process.cpuUsage();
  await body(ROUNDS);
  const used = process.cpuUsage(before);
  return (used.user + used.system) / (ROUNDS * IN_FLIGHT);
}

async function bytesPerRun(body) {
  const session = new Session();
  session.connect();
  const post = (method, params) => new Promise((resolve, reject) => session.post(method, params, (err, result) => (err ? reject(err) : resolve(result))));
  await post('HeapProfiler.startSampling', { samplingInterval: 512, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
  const rounds = Math.max(1, Math.floor(ROUNDS / 5));
  await body(rounds);
  const { profile } = await post('HeapProfiler.stopSampling');
  session.disconnect();
  let total = 0;
  const walk = (node) => {
    total += node.selfSize;
    for (const child of node.children) walk(child);
  };
  walk(profile.head);
  return total / (rounds * IN_FLIGHT);
}

// Warm up (JIT) before measuring.
await run(ROUNDS);
await baseline(ROUNDS);
const report = {
  node: process.version,
  rounds: ROUNDS,
  inFlight: IN_FLIGHT,
  runHandlerCpuMicros: Number((await cpuMicrosPerRun(run)).toFixed(3)),
  baselineCpuMicros: Number((await cpuMicrosPerRun(baseline)).toFixed(3)),
  runHandlerBytes: Math.round(await bytesPerRun(run)),
  baselineBytes: Math.round(await bytesPerRun(baseline)),
};
console.log(JSON.stringify(report, null, 2));
