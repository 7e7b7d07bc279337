// Thread entry when durable-worker runs from its TypeScript sources (vitest, `node --import tsx`):
// tsx's tsImport compiles thread-entry.ts and everything it imports inside this thread, because
// `--import tsx/esm` in the pool's execArgv does not reach worker threads on Node 20. CommonJS and
// an asynchronous import for the reason given in thread-start.cts. Compiled installs never load
// this file: they start at dist/dispatch/thread-start.cjs.
'use strict';
const { pathToFileURL } = require('node:url');

const entry = import('tsx/esm/api').then(({ tsImport }) => tsImport('./thread-entry.ts', pathToFileURL(__filename).href));
// A load error reaches the warm-up task, which rejects with it; not an unhandled rejection before.
entry.catch(() => {});

module.exports = async function runTask(task) {
  return (await entry).default(task);
};
