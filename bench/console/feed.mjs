/**
 * What the development console costs the worker per event when it is on (`dev`): CPU µs per event
 * that the worker's event bus carries through a batch (`lease:pulled`, one `run:done` per event,
 * `ack:done`) with
 *   - bus:     no console (the bus alone, as `run`, which never loads src/console/);
 *   - feed:    the console's feed listening, no page open;
 *   - page:    the feed and one page open (changes summarised for the stream every 200 ms);
 *   - logs:    as `page`, plus one handler log line per event read back by the console's tap.
 * Events carry about 1 KB of data, like the demo's. Batches of 100 events, the event loop yielded
 * between batches (so the feed's timer runs, as it would in the worker). Rounds alternate the cases
 * so that a busy machine's noise hits all of them. Also the heap after the run: the feed keeps the
 * last --max-events events whatever the number of events.
 *
 *   npm run build && node bench/console/feed.mjs [--events 200000] [--rounds 5] [--max-events 500]
 *
 * Runs the compiled code in dist/.
 */
import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { setImmediate as yieldLoop } from 'node:timers/promises';
import pino from 'pino';

const dist = (path) => new URL(`../../dist/${path}`, import.meta.url);
if (!existsSync(dist('console/feed.js'))) {
  console.error('bench/console/feed.mjs runs the compiled code: run `npm run build` first');
  process.exit(2);
}
const { createWorkerEventBus } = await import(dist('worker/event-bus.js').href);
const { ConsoleFeed } = await import(dist('console/feed.js').href);
const { peekEventLogLine } = await import(dist('console/log-lines.js').href);
const { isEventLine } = await import(dist('observability/handler-log-tap.js').href);

const { values } = parseArgs({
  options: { events: { type: 'string', default: '200000' }, rounds: { type: 'string', default: '5' }, 'max-events': { type: 'string', default: '500' } },
});
const EVENTS = Number(values.events);
const ROUNDS = Number(values.rounds);
const MAX_EVENTS = Number(values['max-events']);
const BATCH = 100;

const properties = ['name', 'price', 'inStock', 'colour', 'size', 'brand'].map((id, i) => ({
  id,
  value: i === 1 ? 24.5 : `value of ${id}`,
  type: 'Text',
  delimiter: null,
  lastUpdated: '2026-11-26T10:00:00.000Z',
  language: null,
}));
let sequence = 0;
function event() {
  sequence += 1;
  const entry = { id: `product-${sequence % 50}`, properties, lastUpdated: '2026-11-26T10:00:00.000Z' };
  return {
    specversion: '1.0',
    id: `00000000-0000-4000-8000-${String(sequence).padStart(12, '0')}`,
    type: 'source_entry.updated',
    subject: entry.id,
    sequence: String(sequence),
    source: '/tenants/dev-tenant',
    time: '2026-11-26T10:00:00.000Z',
    data: { sourceId: 'demo-products', entryId: entry.id, previous: entry, current: entry },
  };
}

function logLine(e) {
  return `${JSON.stringify({ level: 30, time: Date.now(), pid: 1, hostname: 'h', thread: 1, handler: 'entry-changes', eventId: e.id, workerId: 'w-0', leaseId: 'l-1', generation: 1, attempt: 1, sourceId: 'demo-products', entry: e.subject, changes: [{ property: 'price', from: 20, to: 24.5 }], msg: `entry ${e.subject} updated: 1 change(s)` })}\n`;
}

/** A case: a fresh bus (and console), then EVENTS events through it; CPU µs per event. */
async function run(kind) {
  const bus = createWorkerEventBus(pino({ level: 'silent' }));
  let feed;
  if (kind !== 'bus') {
    feed = new ConsoleFeed({ maxEvents: MAX_EVENTS });
    feed.attach(bus);
    if (kind !== 'feed') feed.subscribe({ changed: (summaries) => void JSON.stringify(summaries), deadLettersChanged() {}, notice() {} });
  }
  const tap = (line) => {
    if (!isEventLine(line)) return;
    const peeked = peekEventLogLine(line);
    if (peeked !== undefined) feed.log(peeked);
  };
  // Built before the clock starts: the worker has its events already (parsed from the pull).
  const batches = [];
  for (let i = 0; i < EVENTS / BATCH; i++) batches.push(Array.from({ length: BATCH }, event));
  const lines = kind === 'logs' ? batches.map((events) => events.map(logLine)) : [];
  const before = process.cpuUsage();
  for (let b = 0; b < batches.length; b++) {
    const events = batches[b];
    const leaseId = `lease-${b}`;
    bus.emit('lease:pulled', { workerId: 'w-0', leaseId, generation: 1, deliveryAttempt: 1, events });
    for (let i = 0; i < events.length; i++) {
      if (kind === 'logs') tap(lines[b][i]);
      bus.emit('run:done', { workerId: 'w-0', event: events[i], handler: 'entry-changes', outcome: 'ok', durationMs: 0.5 });
    }
    bus.emit('ack:done', { workerId: 'w-0', leaseId, generation: 1, sent: 'ok', status: 'committed' });
    await yieldLoop();
  }
  const used = process.cpuUsage(before);
  feed?.close();
  return (used.user + used.system) / EVENTS;
}

const KINDS = ['bus', 'feed', 'page', 'logs'];
// Warm-up: every path optimised before measuring.
for (const kind of KINDS) await run(kind);
const rows = [];
for (let round = 1; round <= ROUNDS; round++) {
  const row = { round };
  for (const kind of round % 2 === 0 ? [...KINDS].reverse() : KINDS) row[kind] = await run(kind);
  rows.push(row);
  console.log(`round ${round}: ${KINDS.map((k) => `${k} ${row[k].toFixed(2)}`).join(', ')} µs/event`);
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(
  `median: ${KINDS.map((k) => `${k} ${median(rows.map((r) => r[k])).toFixed(2)}`).join(', ')} µs/event (${EVENTS} events x ${ROUNDS} rounds, batches of ${BATCH}, node ${process.version})`,
);
globalThis.gc?.();
console.log(`heap used after the runs: ${(process.memoryUsage().heapUsed / 2 ** 20).toFixed(1)} MiB (the feed keeps ${MAX_EVENTS} events)`);
