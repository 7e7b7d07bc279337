import { describe, expect, it } from 'vitest';
import { formatReport } from '../../bench/chaos/report.js';
import { runChaos } from '../../bench/chaos/run.js';

/**
 * The chaos run of bench/chaos on a small size, three fixed seeds: SIGKILLs, 5xx, dropped
 * connections, 429 bursts, latency spikes and a pause against two `durable-worker run` processes
 * sharing one store (Redis in CI). A failing seed prints its report and replay command.
 */
describe('chaos run (bench/chaos, small size)', () => {
  for (const seed of [101, 202, 303]) {
    it(`seed ${seed}: nothing lost, duplicates only at kills, dead letters = poison, cursor at head`, async () => {
      const report = await runChaos({ seed, events: 1_200, produceSeconds: 6, minKills: 2, killMinMs: 1_500, killMaxMs: 3_000, drainTimeoutSeconds: 60 });
      const text = formatReport(report);
      expect(report.verdict.failures, text).toEqual([]);
      expect(report.kills.length).toBeGreaterThanOrEqual(2);
      expect(report.verdict.lost).toEqual([]);
      expect(report.verdict.recordedEvents).toBe(report.counts.work + report.counts.flaky);
      expect(report.verdict.deadLettered).toBe(report.counts.poison);
      expect(report.verdict.cursor.committed).toBe(report.verdict.cursor.head);
      expect(report.verdict.childrenLeft).toEqual([]);
    }, 120_000);
  }
});
