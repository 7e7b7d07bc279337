// Mirrors bin/durable-worker.js for running the CLI from source: `node --import tsx src/cli/entry.ts`.
import { holdEarlySignals } from './early-signals.js';

holdEarlySignals();
const { main } = await import('./main.js');

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`durable-worker: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
