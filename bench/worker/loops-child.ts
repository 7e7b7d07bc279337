/**
 * The raw pull+ack loops of bench/worker phase b in a process of their own, started fresh for each
 * round like the worker processes, so both sides of the ratio have handled the same events before
 * they are measured (in the long-lived benchmark process the loops kept warming from round to round:
 * 112,000 -> 197,000 events/s over 8 rounds). Prints `READY`; on stdin, `RUN <events>` runs
 * `runLoops` (4 loops, limit 100, no handler) until that many more events are acked and prints
 * `RESULT <json>` (a LoopRun).
 */
import { createInterface } from 'node:readline';
import { createLoopClient, runLoops } from './loops.js';

const url = process.argv[2];
if (url === undefined) throw new Error('usage: loops-child.ts <emulator url>');
// One client for every RUN: the warm-up warms the client that is measured, as in a worker process.
const client = createLoopClient(url, 4);
createInterface({ input: process.stdin }).on('line', (line) => {
  const [command, count] = line.split(' ');
  if (command !== 'RUN') return;
  void runLoops(url, { loops: 4, limit: 100, handlerDelayMs: 0, expected: Number(count), client }).then((run) =>
    process.stdout.write(`RESULT ${JSON.stringify(run)}\n`),
  );
});
process.stdout.write('READY\n');
