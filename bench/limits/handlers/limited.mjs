// Plain JavaScript importing the package by its name (dist/, as users run it).
import { appendFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { defineHandler } from 'durable-worker';

/**
 * The handler of bench/limits: its limits by scenario ($BENCH_SCENARIO), and one JSON line per run
 * appended to $BENCH_RECORD (both replicas append to the same file): `t` start, `e` end (concurrency),
 * `a` ctx.attempt, `s` subject, `p` pid.
 */
const scenario = process.env.BENCH_SCENARIO;
const record = process.env.BENCH_RECORD;
if (!scenario || !record) throw new Error('BENCH_SCENARIO and BENCH_RECORD must be set');
const holdMs = Number(process.env.BENCH_HOLD_MS ?? '0');

const LIMITS = {
  rate: { rate: { max: 40, per: '1s' } },
  perkey: { perKey: { key: (event) => event.subject, rate: { max: 2, per: '1s' } } },
  concurrency: { concurrency: Number(process.env.BENCH_CONCURRENCY ?? '4') },
};

export default defineHandler({
  type: 'source_entry.updated',
  limits: LIMITS[scenario],
  async handle(event, ctx) {
    const line = { t: Date.now(), a: ctx.attempt, s: event.subject, id: event.id, p: process.pid };
    appendFileSync(record, `${JSON.stringify(line)}\n`);
    if (holdMs > 0) {
      await sleep(holdMs, undefined, { signal: ctx.signal });
      appendFileSync(record, `${JSON.stringify({ e: Date.now(), id: event.id, p: process.pid })}\n`);
    }
  },
});
