/**
 * What the worker's guarded event bus (src/worker/event-bus.ts) costs per emit against a plain
 * EventEmitter: CPU µs per `emit('run:done', ...)` with two listeners, as the metrics and the
 * summary line listen (the worker emits it once per handler run). Rounds alternate plain and guarded
 * so that a busy machine's noise hits both.
 *
 *   npm run build && node bench/worker/event-bus.mjs [--emits 2000000] [--rounds 5]
 *
 * Runs the compiled code in dist/, as the worker does in production.
 */
import { existsSync } from 'node:fs';
import { EventEmitter } from 'node:events';
import { parseArgs } from 'node:util';
import pino from 'pino';

const compiled = new URL('../../dist/worker/event-bus.js', import.meta.url);
if (!existsSync(compiled)) {
  console.error('bench/worker/event-bus.mjs runs the compiled code: run `npm run build` first');
  process.exit(2);
}
const { createWorkerEventBus } = await import(compiled.href);
const { values } = parseArgs({ options: { emits: { type: 'string', default: '2000000' }, rounds: { type: 'string', default: '5' } } });
const EMITS = Number(values.emits);
const ROUNDS = Number(values.rounds);

function withListeners(bus) {
  let count = 0;
  let sum = 0;
  bus.on('run:done', () => void count++);
  bus.on('run:done', (e) => void (sum += e.durationMs));
  return bus;
}

const payload = { workerId: 'w-0', event: { id: 'e-1', type: 't' }, handler: 'h', outcome: 'ok', durationMs: 1 };

function microsPerEmit(bus) {
  const before = process.cpuUsage();
  for (let i = 0; i < EMITS; i++) bus.emit('run:done', payload);
  const used = process.cpuUsage(before);
  return (used.user + used.system) / EMITS;
}

const plain = withListeners(new EventEmitter());
const guarded = withListeners(createWorkerEventBus(pino({ level: 'silent' })));
// Warm-up: both paths optimised before measuring.
microsPerEmit(plain);
microsPerEmit(guarded);
const rows = [];
for (let round = 1; round <= ROUNDS; round++) rows.push({ round, plainMicros: microsPerEmit(plain), guardedMicros: microsPerEmit(guarded) });
for (const row of rows) console.log(`round ${row.round}: plain ${row.plainMicros.toFixed(4)} µs/emit, guarded ${row.guardedMicros.toFixed(4)} µs/emit`);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(
  `median: plain ${median(rows.map((r) => r.plainMicros)).toFixed(4)}, guarded ${median(rows.map((r) => r.guardedMicros)).toFixed(4)} µs/emit (${EMITS} emits x ${ROUNDS} rounds, node ${process.version})`,
);
