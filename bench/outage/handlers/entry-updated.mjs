// Plain JavaScript importing the package by its name (dist/, as users run it).
import { defineHandler } from 'durable-worker';

/**
 * The benchmark's handler: one call to the dependency of bench/outage/dependency.ts
 * ($BENCH_DEPENDENCY_URL), which does the ~20 ms of work; any answer but 200 is a failed run.
 */
const base = process.env.BENCH_DEPENDENCY_URL;
if (!base) throw new Error('BENCH_DEPENDENCY_URL is not set');

export default defineHandler({
  type: 'source_entry.updated',
  async handle(event, ctx) {
    const url = `${base}/call?event=${encodeURIComponent(event.id)}&subject=${encodeURIComponent(event.subject ?? '')}`;
    const response = await fetch(url, { method: 'POST', signal: ctx.signal });
    await response.text();
    if (response.status !== 200) throw new Error(`dependency answered ${response.status}`);
  },
});
