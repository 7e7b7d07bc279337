import { describe, expect, it } from 'vitest';
import { emulatorForFile } from '../worker/harness.js';
import { checkInvariant, describeViolations } from './invariant.js';
import { checkModel } from './model-check.js';
import { failureMessage, runScenario } from './run-scenario.js';
import { describeScenario, scenarioArb, type PlannedEvent, type Scenario } from './scenario.js';

/**
 * The model test of failure handling: random workloads (subjects from one long chain to all
 * different, --limit, --workers, --max-in-progress, overlapping leases, single-event and batch
 * handlers, one or two handlers per event, both isolations) with random failures per event and
 * handler (fails its first k runs, always fails, PermanentError, RetryLaterError, an outage of one
 * handler), each against a real worker and the emulator over HTTP. After each, the invariant of
 * test/model/invariant.ts must hold: dead-lettered iff PermanentError or --max-attempts failed runs,
 * every other effect exactly once, ctx.attempt counting that handler's failed runs, the cursor at
 * the head, and one handler's events of a subject in stream order. With a store that defers runs, a
 * handler that is down holds back no other handler. A failure prints the command that replays it
 * (test/model/model-check.ts).
 */
const t = emulatorForFile();
const FILE = 'test/model/failures.test.ts';
/** How long handler `two` is down in the isolation property: far longer than the other handlers' work. */
const OUTAGE_MS = 8_000;

/** A scenario written by hand: `plan(i)` for handler `one` of event i, on `subjects` chains. */
function fixed(count: number, subjects: number, plan: (i: number) => PlannedEvent['plan']['one'], options: Partial<Scenario>): Scenario {
  const events = Array.from({ length: count }, (_, i): PlannedEvent => ({
    subject: i % subjects,
    type: 'model.one',
    plan: { one: plan(i), two: { kind: 'ok' }, bulk: { kind: 'ok' } },
    workMs: 1,
  }));
  return {
    events,
    subjects,
    limit: 20,
    workers: 1,
    concurrency: 8,
    maxInProgress: undefined,
    maxLeases: undefined,
    isolation: 'none',
    maxAttempts: 3,
    breaker: true,
    breakerCooldownMs: 100,
    outage: undefined,
    store: 'sqlite',
    ...options,
  };
}

describe('failure handling, model-based', () => {
  it('random workloads and failure patterns keep the dead-letter invariant', async () => {
    await checkModel(
      scenarioArb({ minEvents: 10, maxEvents: 120, weights: { failingPercent: 25 }, outage: true, workMs: [0, 4] }),
      async (scenario) => {
        const result = await runScenario(t.emulator, scenario);
        if (result.violations.length > 0) throw new Error(failureMessage(describeScenario(scenario), result));
      },
      { testFile: FILE, defaultRuns: 6 },
    );
  }, 600_000);

  it("a handler's runs never wait on another handler's failure: with a deferring store, every run of the other handlers ends while one handler is down", async () => {
    await checkModel(
      // The other handlers never fail here, and `two` does not run out of attempts while it is down:
      // with a store that keeps waits in the lease (memory), the other handlers' later events of a
      // subject would wait for `two`'s retries until the outage ends.
      scenarioArb({ minEvents: 10, maxEvents: 100, weights: { failingPercent: 0 }, outage: false, workMs: [0, 4] }).map((s): Scenario => ({
        ...s,
        // Handler `two` runs on a third of the events and is down for the whole run of the others.
        events: s.events.map((e, i) => (i % 3 === 0 ? { ...e, type: 'model.one-two' } : e)),
        maxAttempts: 100,
        store: 'sqlite',
        outage: { handler: 'two', fromMs: 0, durationMs: OUTAGE_MS },
      })),
      async (scenario) => {
        const result = await runScenario(t.emulator, scenario, 60_000);
        if (result.violations.length > 0) throw new Error(failureMessage(describeScenario(scenario), result));
        const outageEndsMs = result.appendedAtMs + OUTAGE_MS;
        const late = result.observed.runs.filter((r) => r.handler !== 'two' && r.endMs > outageEndsMs);
        if (late.length > 0)
          throw new Error(
            `${late.length} run(s) of other handlers ended after two's outage (first: ${late[0]?.handler} ${late[0]?.eventId}, ${(late[0]?.endMs ?? 0) - outageEndsMs} ms after)\n${describeScenario(scenario)}\n${result.stats}`,
          );
        // Not vacuous: `two` failed during its outage, and the others ran during it.
        expect(result.observed.runs.some((r) => r.handler === 'two' && r.cause === 'outage')).toBe(true);
      },
      { testFile: FILE, defaultRuns: 3 },
    );
  }, 600_000);

  it('first-run failures on same-subject chains across leases: only the poison events are dead-lettered', async () => {
    // Every 10th event fails its first run only, 3 always fail; 4 workers, leases of 50, 20 subject chains.
    const scenario = fixed(600, 20, (i) => (i % 200 === 17 ? { kind: 'poison' } : i % 10 === 3 ? { kind: 'fail-first', k: 1 } : { kind: 'ok' }), {
      workers: 4,
      limit: 50,
    });
    const result = await runScenario(t.emulator, scenario);
    const wronglyDead = result.violations.filter((v) => v.rule === 'dead-letter-without-cause').length;
    expect(result.violations.length, `${wronglyDead} healthy event(s) dead-lettered\n${failureMessage(describeScenario(scenario), result)}`).toBe(0);
    expect(result.observed.deadLetters).toHaveLength(3);
  }, 120_000);

  it('is not vacuous: checked against one more attempt than the worker had, the poison events are reported', async () => {
    const scenario = fixed(40, 4, (i) => (i % 10 === 5 ? { kind: 'poison' } : i % 10 === 2 ? { kind: 'fail-first', k: 1 } : { kind: 'ok' }), {
      maxAttempts: 2,
    });
    const result = await runScenario(t.emulator, scenario);
    const mutated = checkInvariant(result.observed, { ...result.options, maxAttempts: scenario.maxAttempts + 1 });
    const reported = mutated.filter((v) => v.rule === 'dead-letter-without-cause').map((v) => v.key);
    const poisonKeys = result.observed.deadLetters.map((d) => `${d.handler}:${d.event.id}`);
    expect(poisonKeys.length, describeViolations(result.violations)).toBeGreaterThanOrEqual(4);
    expect(reported.sort()).toEqual(poisonKeys.sort());
  }, 120_000);
});
