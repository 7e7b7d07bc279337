#!/usr/bin/env node
// The bin runs the compiled CLI; `npm install` builds it through the `prepare` script.
import { enableCompileCache } from 'node:module';
import { holdEarlySignals } from '../dist/cli/early-signals.js';

// V8's compiled code of every module loaded from here on is kept on disk and reused by the next start
// (docs/benchmarks.md#cold-start): NODE_COMPILE_CACHE when set (the image's, warmed at build), else a
// folder under the OS's temp folder. Exported so that worker threads and child processes use it too.
const cache = enableCompileCache();
if (cache.directory !== undefined && process.env.NODE_COMPILE_CACHE === undefined) process.env.NODE_COMPILE_CACHE = cache.directory;
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
