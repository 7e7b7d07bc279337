/**
 * What the tracing hooks add to the run path with tracing off, per event, measured alone (the worker
 * bench's CPU per event moves by more than this between runs): the calls the run path makes on the
 * no-op tracer, with a batch of --batch events per lease, against the same loop without them.
 *
 *   node --import tsx bench/tracing/hooks-off.ts [--events 20000000] [--batch 100] [--rounds 5]
 *
 * Per event: `lease.trace.process(job)` (a constant back), the job's `trace` field set from it, the
 * run's `end`, and run-handler's check of `job.trace`. Per lease: `received`, the claim's `call`
 * (a closure), `settle`, its `call` and `end`. Its figures: docs/benchmarks.md#tracing.
 */
import { parseArgs } from 'node:util';
import { NOOP_TRACER, type RunTracer } from '../../src/tracing/run-tracer.js';
import type { CloudEvent, LeaseBatch } from '../../src/types.js';

const { values } = parseArgs({
  options: { events: { type: 'string', default: '20000000' }, batch: { type: 'string', default: '100' }, rounds: { type: 'string', default: '5' } },
});
const EVENTS = Number(values.events);
const BATCH = Number(values.batch);
const ROUNDS = Number(values.rounds);

const events: CloudEvent[] = Array.from({ length: BATCH }, (_, i) => ({
  specversion: '1.0',
  id: `e${i}`,
  type: 't',
  subject: `s${i % 7}`,
  sequence: String(i + 1),
  data: null,
}));
const batch: LeaseBatch = { leaseId: 'l', generation: 1, attempt: 1, events };
const ctx = { attempt: 1, deliveryAttempt: 1, generation: 1, workerId: 'w-0', leaseId: 'l', leaseDeadlineMs: 0 };
const claim = async () => 0;
let sink = 0;

/** The run path's work that is not tracing, reduced to a job object per event and a counter. */
function withoutHooks(): void {
  for (let done = 0; done < EVENTS; done += BATCH) {
    for (const event of events) {
      const job = { handler: 'h', event, ctx };
      sink += job.event.sequence.length;
    }
  }
}

async function withHooks(tracer: RunTracer): Promise<void> {
  for (let done = 0; done < EVENTS; done += BATCH) {
    const lease = tracer.received({ workerId: 'w-0', pulled: batch, pulledAtMs: 0 });
    sink += await lease.call('idempotency claim', claim);
    for (const event of events) {
      const job: { handler: string; event: CloudEvent; ctx: typeof ctx; trace: unknown } = { handler: 'h', event, ctx, trace: undefined };
      const run = lease.process(job);
      job.trace = run.carrier;
      if (job.trace === undefined) sink += job.event.sequence.length;
      run.end('ok');
    }
    const settle = lease.settle('ok');
    sink += await settle.call('idempotency writes', claim);
    settle.end('committed');
  }
}

function cpuNsPerEvent(started: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(started);
  return ((used.user + used.system) * 1_000) / EVENTS;
}

const without: number[] = [];
const withNoop: number[] = [];
for (let round = 0; round <= ROUNDS; round++) {
  // Round 0 warms both up and is not counted.
  let started = process.cpuUsage();
  withoutHooks();
  const a = cpuNsPerEvent(started);
  started = process.cpuUsage();
  await withHooks(NOOP_TRACER);
  const b = cpuNsPerEvent(started);
  if (round > 0) {
    without.push(a);
    withNoop.push(b);
  }
}
const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
const fmt = (xs: number[]) => xs.map((x) => x.toFixed(1)).join(', ');
console.log(`CPU per event, ${EVENTS} events in leases of ${BATCH}, ${ROUNDS} rounds (Node ${process.version}):`);
console.log(`  without the hooks:      median ${median(without).toFixed(1)} ns (${fmt(without)})`);
console.log(`  with the no-op tracer:  median ${median(withNoop).toFixed(1)} ns (${fmt(withNoop)})`);
console.log(`  added:                  median ${(median(withNoop) - median(without)).toFixed(1)} ns per event`);
if (sink === -1) console.log(sink);
