#!/usr/bin/env node
// The bin runs the compiled CLI; `npm install` builds it through the `prepare` script.
import { holdEarlySignals } from '../dist/cli/early-signals.js';

// Before the CLI's modules load: a shutdown signal in that window exits 0 instead of killing the process.
holdEarlySignals();
const { main } = await import('../dist/cli/main.js');

main(process.argv.slice(2)).then(
  (code) => {
    if (typeof code === 'number') process.exitCode = code;
  },
  (err) => {
    process.stderr.write(`durable-worker: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
