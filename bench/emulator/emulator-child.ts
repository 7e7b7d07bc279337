/**
 * The emulator side of the pull+ack benchmark, in its own process so server and client each get
 * an event loop (the machine has 2 cores). Appends BENCH_PREFILL_EVENTS (default 1,000,000)
 * events before the run, in chunks, and prints `READY <url>` on stdout. With BENCH_TOP_UP=1 it
 * also keeps appending during the run (ingest competing with pulls for the CPU). With
 * BENCH_CONTROL=1 it reads commands on stdin: `APPEND <n> [<subjects>]` appends n more events and
 * answers `APPENDED <n> <head>` (bench/worker appends between phases, each on a fresh consumer).
 * Events have subjects of their own (`s-<n>`), or with `<subjects>` subjects that cycle over that
 * many entries (`s-0` ... `s-<subjects - 1>`), as updates of a set of entries would.
 */
import { createInterface } from 'node:readline';
import { startEmulator } from '../../src/emulator/index.js';
import { eventData } from './event-data.mjs';

const prefillEvents = Number(process.env.BENCH_PREFILL_EVENTS ?? 1_000_000);
const topUpEnabled = process.env.BENCH_TOP_UP === '1';
const em = await startEmulator({ port: 0 });

/**
 * BENCH_EVENT_DATA=entry: each event's data is an entry update as the platform sends them (the entry
 * before and after, ~1 KB of JSON) instead of a counter and 64 characters.
 */
const dataKind = process.env.BENCH_EVENT_DATA === 'entry' ? 'entry' : 'small';

let appended = 0;
function append(count: number, subjects = 0): void {
  for (let done = 0; done < count; done += 10_000) {
    const events = [];
    for (let i = 0; i < Math.min(10_000, count - done); i++) {
      appended++;
      const subject = subjects > 0 ? `s-${(done + i) % subjects}` : `s-${appended}`;
      events.push({ type: 'bench.event', subject, data: eventData(dataKind, appended, subject) });
    }
    em.appendEvents('dev-tenant', events);
  }
}

const prefillStarted = performance.now();
append(prefillEvents);
const prefillMs = performance.now() - prefillStarted;
if (topUpEnabled) {
  setInterval(() => {
    const consumer = em.state().tenants.find((t) => t.id === 'dev-tenant')!.consumers[0]!;
    const backlog = Number(consumer.head ?? 0) - Number(consumer.committed ?? 0);
    if (backlog < 100_000) append(100_000 - backlog);
  }, 100).unref();
}

if (process.env.BENCH_CONTROL === '1') {
  createInterface({ input: process.stdin }).on('line', (line) => {
    const [command, arg, subjects] = line.trim().split(' ');
    if (command !== 'APPEND') return;
    const count = Number(arg);
    append(count, Number(subjects ?? 0));
    const head = em.state().tenants.find((t) => t.id === 'dev-tenant')!.head;
    process.stdout.write(`APPENDED ${count} ${head}\n`);
  });
  // The benchmark gone (stdin closed): leave too, also when started in a session of its own
  // (BENCH_EMULATOR_OWN_GROUP), where a Ctrl-C of the benchmark does not reach this process.
  process.stdin.on('end', () => process.exit(0));
}

let cpuAtMark = process.cpuUsage();
process.stdout.write(`PREFILL ${prefillEvents} ${Math.round(prefillMs)} ${Math.round(process.memoryUsage().rss / 1048576)}\n`);
process.stdout.write(`READY ${em.url}\n`);
// SIGUSR2 = the measured run starts; SIGTERM = it ended: report the server's CPU time in between.
process.on('SIGUSR2', () => {
  cpuAtMark = process.cpuUsage();
});
process.on('SIGTERM', () => {
  const used = process.cpuUsage(cpuAtMark);
  process.stdout.write(`CPU_US ${used.user + used.system}\n`, () => {
    void em.close().then(() => process.exit(0));
  });
});
