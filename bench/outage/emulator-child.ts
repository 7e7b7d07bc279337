/**
 * The platform of bench/outage in a process of its own (the worker is another, the benchmark a
 * third), so that neither the dependency nor the benchmark's bookkeeping takes its event loop.
 * Prints `READY <url>`; reads lines `APPEND <subject> <subject> ...` on stdin and appends one event
 * per subject to dev-tenant's stream (dev-consumer reads it), answering `APPENDED <count>`; a token
 * `<type>|<subject>` gives the event's type (default source_entry.updated).
 * Leaves when stdin closes (the benchmark gone).
 */
import { createInterface } from 'node:readline';
import { startEmulator } from '../../src/emulator/index.js';

const em = await startEmulator({ port: 0 });
let appended = 0;
createInterface({ input: process.stdin }).on('line', (line) => {
  const [command, ...subjects] = line.trim().split(' ');
  if (command !== 'APPEND') return;
  em.appendEvents(
    'dev-tenant',
    subjects.map((token) => {
      const bar = token.indexOf('|');
      const type = bar === -1 ? 'source_entry.updated' : token.slice(0, bar);
      const subject = token.slice(bar + 1);
      return { type, subject, data: { entryId: subject, n: ++appended } };
    }),
  );
  process.stdout.write(`APPENDED ${subjects.length}\n`);
});
process.stdin.on('end', () => void em.close().then(() => process.exit(0)));
process.stdout.write(`READY ${em.url}\n`);
