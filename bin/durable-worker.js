#!/usr/bin/env node
// The bin runs the compiled CLI; `npm install` builds it through the `prepare` script.
import { main } from '../dist/cli/main.js';

main(process.argv.slice(2)).then(
  (code) => {
    if (typeof code === 'number') process.exitCode = code;
  },
  (err) => {
    process.stderr.write(`durable-worker: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
