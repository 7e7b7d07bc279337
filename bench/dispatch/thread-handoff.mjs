/**
 * What handing a lease's events to a handler thread costs the main thread, per event, two ways:
 *
 * - `clone`: the parsed events go in the message and the structured clone copies them (as
 *   src/dispatch/thread-link.ts sends runs, in columns);
 * - `shared`: the pull's answer is written once into a SharedArrayBuffer, which a message passes
 *   without copying; each run travels as its event's bounds in that text, found by a scan, and the
 *   thread parses its own events.
 *
 *   node bench/dispatch/thread-handoff.mjs [--runs 10] [--events 20000]
 *
 * Each measurement is a fresh process (a worker's first 20,000 events run cold, as in phase h of
 * bench/worker), the two ways alternating; for the bench's small events and for entry updates
 * (~1 KB, as the platform sends them). It counts the main thread's CPU (`process.threadCpuUsage`,
 * Node 22.6+) from the first lease to the last, less the JSON.parse of the answer, which the worker
 * does either way. Why the worker clones: docs/benchmarks.md#what-was-tried-and-why-it-is-not-in.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Worker } from 'node:worker_threads';
import { eventData } from '../emulator/event-data.mjs';

const { values } = parseArgs({
  options: { runs: { type: 'string', default: '10' }, events: { type: 'string', default: '20000' }, child: { type: 'string' }, kind: { type: 'string' } },
});
const EVENTS = Number(values.events);
const PER_LEASE = 100;

if (values.child === undefined) {
  const self = fileURLToPath(import.meta.url);
  const results = {};
  for (const kind of ['small', 'entry']) {
    for (let r = 0; r < Number(values.runs); r++) {
      for (const way of ['clone', 'shared']) {
        const out = execFileSync(process.execPath, [self, '--child', way, '--kind', kind, '--events', String(EVENTS)], { encoding: 'utf8' });
        (results[`${kind} ${way}`] ??= []).push(Number(out.trim()));
      }
    }
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  for (const [name, xs] of Object.entries(results)) {
    console.log(
      `${name}: main thread ${median(xs).toFixed(2)} µs per event (median of ${xs.length}; ${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)})`,
    );
  }
} else {
  console.log(await measure(values.child, values.kind ?? 'small'));
}

/** One fresh process's figure: main-thread µs per event, JSON.parse excluded. */
async function measure(way, kind) {
  const texts = Array.from({ length: EVENTS / PER_LEASE }, (_, lease) => leaseText(lease, kind));
  const thread = new Worker(new URL('./thread-handoff-thread.mjs', import.meta.url), { workerData: { way } });
  await new Promise((resolve) => thread.once('online', resolve));
  let received = 0;
  const allReceived = new Promise((resolve) => thread.on('message', (count) => (received += count) === EVENTS && resolve()));
  const ctx = { attempt: 1, generation: 1, workerId: 'w-0', leaseId: 'lease', leaseDeadlineMs: Date.now() + 30_000 };
  const start = process.threadCpuUsage();
  let parseUs = 0;
  for (const text of texts) {
    const before = process.threadCpuUsage();
    const events = JSON.parse(text).events;
    const parse = process.threadCpuUsage(before);
    parseUs += parse.user + parse.system;
    const states = new Uint8Array(new SharedArrayBuffer(events.length));
    const contexts = events.map(() => ctx);
    const handlers = events.map(() => 'work');
    if (way === 'clone') thread.postMessage({ firstTaskId: 1, handlers, events, contexts, states });
    else {
      // The bench's texts are ASCII: string offsets are byte offsets.
      const shared = new SharedArrayBuffer(text.length);
      Buffer.from(shared).write(text, 'latin1');
      const { starts, ends } = eventBounds(text);
      thread.postMessage({ firstTaskId: 1, handlers, text: shared, starts, ends, contexts, states });
    }
    // One lease per turn of the event loop, as pulls are answered.
    await new Promise((resolve) => setImmediate(resolve));
  }
  const used = process.threadCpuUsage(start);
  await allReceived;
  await thread.terminate();
  return ((used.user + used.system - parseUs) / EVENTS).toFixed(2);
}

/** Where each element of the answer's top-level `events` array starts and ends (string offsets). */
function eventBounds(text) {
  const starts = [];
  const ends = [];
  let i = text.indexOf('[', text.indexOf('"events"')) + 1;
  let depth = 0;
  let start = -1;
  for (; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // A string: on to its closing quote, one not escaped by an odd run of backslashes.
      for (;;) {
        i = text.indexOf('"', i + 1);
        let b = i - 1;
        while (text.charCodeAt(b) === 0x5c) b--;
        if ((i - 1 - b) % 2 === 0) break;
      }
    } else if (c === 0x7b || c === 0x5b) {
      if (depth++ === 0) start = i;
    } else if (c === 0x7d || c === 0x5d) {
      if (depth === 0) break;
      if (--depth === 0) {
        starts.push(start);
        ends.push(i + 1);
      }
    }
  }
  return { starts, ends };
}

/** A pull's answer as a server sends it: 100 CloudEvents, subjects cycling over 50. */
function leaseText(lease, kind) {
  const events = [];
  for (let i = 0; i < PER_LEASE; i++) {
    const n = lease * PER_LEASE + i + 1;
    const subject = `s-${n % 50}`;
    events.push({
      specversion: '1.0',
      id: crypto.randomUUID(),
      source: '/tenants/dev-tenant',
      type: 'bench.event',
      subject,
      time: new Date().toISOString(),
      sequence: String(n),
      datacontenttype: 'application/json',
      data: eventData(kind, n, subject),
    });
  }
  return JSON.stringify({ leaseId: `lease-${lease}`, generation: 1, attempt: 1, expiresAt: new Date(Date.now() + 60_000).toISOString(), events });
}
