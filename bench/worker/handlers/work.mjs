// Plain JavaScript importing the package by its name (resolved to dist/ by package.json "exports"),
// so the benchmark loads what users run: no TypeScript loader in the handler path.
import { setTimeout as sleep } from 'node:timers/promises';
import { defineHandler } from 'durable-worker';
import { answerHeapRequests } from '../heap-report.mjs';
import { openEffects } from '../effects.mjs';

/**
 * The benchmark's handler: $BENCH_HANDLER_DELAY_MS of async work (a timer), $BENCH_HANDLER_SPIN_MS of
 * CPU work (its thread busy all along: phase i), or nothing at all; with
 * $BENCH_EFFECTS_FILE, then the event id appended to that file (one line per run: the effect the
 * benchmark counts afterwards, as a handler writing somewhere would).
 */
const delayMs = Number(process.env.BENCH_HANDLER_DELAY_MS ?? 0);
const spinMs = Number(process.env.BENCH_HANDLER_SPIN_MS ?? 0);
const effects = process.env.BENCH_EFFECTS_FILE ? await openEffects(process.env.BENCH_EFFECTS_FILE) : undefined;
// Phase d's memory breakdown reads each handler thread's heap (bench/worker/heap-report.mjs).
if (process.env.BENCH_HEAP_DETAIL === '1') answerHeapRequests();

export default defineHandler({
  type: '*',
  async handle(event) {
    if (spinMs > 0) {
      const until = performance.now() + spinMs;
      while (performance.now() < until) {
        // CPU work: nothing else runs on this thread meanwhile
      }
    }
    if (delayMs > 0) await sleep(delayMs);
    if (effects !== undefined) await effects.append(event.id);
  },
});
