import { setTimeout as sleep } from 'node:timers/promises';
import { defineHandler } from '../../../src/index.js';

/** The benchmark's handler: $BENCH_HANDLER_DELAY_MS of async work (a timer), or nothing at all. */
const delayMs = Number(process.env.BENCH_HANDLER_DELAY_MS ?? 0);

export default defineHandler({
  type: '*',
  async handle() {
    if (delayMs > 0) await sleep(delayMs);
  },
});
