import { describe, expect, it } from 'vitest';
import { runOutage } from '../../bench/outage/outage.js';
import { runPoison } from '../../bench/outage/poison.js';
import { formatOutage, formatPoison } from '../../bench/outage/report.js';

/**
 * bench/outage on a tiny size, so that the benchmark keeps working: `durable-worker run` (built
 * dist/) as a fresh process, the emulator in another, the dependency here. The figures themselves
 * come from `npm run bench:outage` (docs/benchmarks.md, "Failures and retries").
 */
describe('outage benchmark (bench/outage, small size)', () => {
  it('a dependency outage of 2.5 s: the breaker parks the events, nothing is dead-lettered or lost, effects resume after the return', async () => {
    const r = await runOutage({ events: 150, subjects: 15, produceSeconds: 5, outageStartSeconds: 1.5, outageSeconds: 2.5, drainTimeoutSeconds: 60 });
    const text = formatOutage('smoke', r);
    expect(r.failedRunsDuring, text).toBeGreaterThan(0);
    expect(r.deadLetters, text).toBe(0);
    expect(r.lost, text).toBe(0);
    expect(r.cursorAtHead, text).toBe(true);
    expect(r.firstEffectAfterSeconds, text).toBeDefined();
    expect(r.caughtUpSeconds, text).toBeDefined();
    expect(r.workerExit, text).toBe(0);
  }, 120_000);

  it('a poison subject (short backoff): dead-lettered at its last attempt, every other event takes effect, in both runs', async () => {
    const r = await runPoison({
      seconds: 3,
      subjects: 15,
      backlog: 100,
      poisonAtSeconds: [0.5],
      drainTimeoutSeconds: 60,
      workerArgs: ['--retry-backoff-min', '50ms', '--retry-backoff-max', '200ms'],
    });
    const text = formatPoison('smoke', r);
    expect(r.baseline.deadLetters, text).toEqual([]);
    expect(
      r.poisoned.deadLetters.map((d) => [d.event.subject, d.reason, d.attempt]),
      text,
    ).toEqual([['entry-poison', 'max-attempts', 5]]);
    expect(r.poisoned.failedRuns, text).toBe(5);
    for (const run of [r.baseline, r.poisoned]) {
      expect(run.lost, text).toBe(0);
      expect(run.cursorAtHead, text).toBe(true);
      expect(run.workerExit, text).toBe(0);
    }
    expect(r.othersEventsPerSecondBaseline, text).toBeGreaterThan(0);
    expect(r.othersEventsPerSecondPoisoned, text).toBeGreaterThan(0);
  }, 120_000);
});
