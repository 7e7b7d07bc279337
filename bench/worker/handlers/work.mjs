// Plain JavaScript importing the package by its name (resolved to dist/ by package.json "exports"),
// so the benchmark loads what users run: no TypeScript loader in the handler path.
import { setTimeout as sleep } from 'node:timers/promises';
import { defineHandler } from 'durable-worker';
import { answerHeapRequests } from '../heap-report.mjs';

/** The benchmark's handler: $BENCH_HANDLER_DELAY_MS of async work (a timer), or nothing at all. */
const delayMs = Number(process.env.BENCH_HANDLER_DELAY_MS ?? 0);
// Phase d's memory breakdown reads each handler thread's heap (bench/worker/heap-report.mjs).
if (process.env.BENCH_HEAP_DETAIL === '1') answerHeapRequests();

export default defineHandler({
  type: '*',
  async handle() {
    if (delayMs > 0) await sleep(delayMs);
  },
});
