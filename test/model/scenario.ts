import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import type { ModelEventData, Pattern } from '../fixtures/model-handlers/_plan.js';

/**
 * The random workloads of the model tests: events (subjects, which handlers match, what each
 * handler does on each run), the worker's flow options and an optional outage of one handler.
 * Handlers and the event types they match are those of test/fixtures/model-handlers.
 */
export const HANDLERS_OF_TYPE: Record<string, readonly string[]> = {
  'model.one': ['one'],
  'model.one-two': ['one', 'two'],
  'model.bulk': ['bulk'],
  'model.one-bulk': ['one', 'bulk'],
};
export const BATCH_HANDLERS: ReadonlySet<string> = new Set(['bulk']);
const TYPES = Object.keys(HANDLERS_OF_TYPE);

export interface PlannedEvent {
  subject: number;
  type: string;
  plan: Record<string, Pattern>;
  workMs: number;
}

export interface Outage {
  handler: string;
  /** From the moment the events are appended. */
  fromMs: number;
  durationMs: number;
}

export interface Scenario {
  events: PlannedEvent[];
  subjects: number;
  limit: number;
  workers: number;
  concurrency: number;
  maxInProgress: number | undefined;
  maxLeases: number | undefined;
  isolation: 'thread' | 'none';
  maxAttempts: number;
  breaker: boolean;
  breakerCooldownMs: number;
  outage: Outage | undefined;
  /** The idempotency store: `memory` keeps waits in their lease, `sqlite` defers them to the store. */
  store: 'memory' | 'sqlite';
}

/** Backoff of every scenario: short, so a run stays a few seconds. */
export const RETRY_BACKOFF_MIN_MS = 10;
export const RETRY_BACKOFF_MAX_MS = 200;

export interface Weights {
  /** Out of 100: events whose handler fails in some way (the rest are ok). */
  failingPercent: number;
}

function patternArb(maxAttempts: number, weights: Weights): fc.Arbitrary<Pattern> {
  const failing = fc.oneof(
    { weight: 4, arbitrary: fc.integer({ min: 1, max: Math.max(1, maxAttempts - 1) }).map((k): Pattern => ({ kind: 'fail-first', k })) },
    { weight: 2, arbitrary: fc.constant<Pattern>({ kind: 'poison' }) },
    { weight: 2, arbitrary: fc.integer({ min: 0, max: maxAttempts - 1 }).map((after): Pattern => ({ kind: 'permanent', after })) },
    {
      weight: 2,
      arbitrary: fc
        .record({ times: fc.integer({ min: 1, max: Math.max(1, maxAttempts - 1) }), afterMs: fc.integer({ min: 5, max: 300 }) })
        .map((r): Pattern => ({ kind: 'retry-later', ...r })),
    },
  );
  return fc.oneof(
    { weight: 100 - weights.failingPercent, arbitrary: fc.constant<Pattern>({ kind: 'ok' }) },
    { weight: weights.failingPercent, arbitrary: failing },
  );
}

function eventArb(subjects: number, types: readonly string[], maxAttempts: number, bounds: Bounds): fc.Arbitrary<PlannedEvent> {
  const pattern = patternArb(maxAttempts, bounds.weights);
  return fc.record({
    subject: fc.nat({ max: subjects - 1 }),
    type: fc.constantFrom(...types),
    plan: fc.record({ one: pattern, two: pattern, bulk: pattern }),
    workMs: fc.integer({ min: bounds.workMs[0], max: bounds.workMs[1] }),
  });
}

export interface Bounds {
  minEvents: number;
  maxEvents: number;
  weights: Weights;
  outage: boolean;
  /** Each run's async work, ms: [min, max]. */
  workMs: [number, number];
}

export function scenarioArb(bounds: Bounds): fc.Arbitrary<Scenario> {
  return (
    fc
      .record({
        subjects: fc.oneof(fc.integer({ min: 1, max: 4 }), fc.integer({ min: 5, max: 40 }), fc.constant(1_000)),
        types: fc.subarray(TYPES, { minLength: 1 }),
        maxAttempts: fc.integer({ min: 2, max: 5 }),
      })
      .chain(({ subjects, types, maxAttempts }) =>
        fc.record({
          events: fc.array(eventArb(subjects, types, maxAttempts, bounds), { minLength: bounds.minEvents, maxLength: bounds.maxEvents, size: 'max' }),
          subjects: fc.constant(subjects),
          limit: fc.oneof(fc.integer({ min: 1, max: 5 }), fc.integer({ min: 6, max: 50 })),
          workers: fc.integer({ min: 1, max: 3 }),
          concurrency: fc.integer({ min: 1, max: 8 }),
          maxInProgress: fc.option(fc.integer({ min: 1, max: 16 }), { nil: undefined }),
          maxLeases: fc.option(fc.integer({ min: 1, max: 8 }), { nil: undefined }),
          isolation: fc.constantFrom('thread' as const, 'none' as const),
          store: fc.constantFrom('memory' as const, 'sqlite' as const),
          maxAttempts: fc.constant(maxAttempts),
          breaker: fc.boolean(),
          // --breaker-cooldown takes 100 ms at the least.
          breakerCooldownMs: fc.integer({ min: 100, max: 300 }),
          outage: bounds.outage
            ? fc.option(
                fc.record({
                  handler: fc.constantFrom(...new Set(types.flatMap((t) => HANDLERS_OF_TYPE[t] ?? []))),
                  fromMs: fc.integer({ min: 0, max: 300 }),
                  durationMs: fc.integer({ min: 50, max: 1_000 }),
                }),
                { nil: undefined },
              )
            : fc.constant(undefined),
        }),
      )
      // --max-leases below --workers is refused by the config (each of --workers is a workerId).
      .map((s) => (s.maxLeases !== undefined && s.maxLeases < s.workers ? { ...s, maxLeases: s.workers } : s))
  );
}

/** The data of each event, ready to append; writes the outage file (windows from `nowMs`) when there is one. */
export function eventsOf(scenario: Scenario, dir: string, runsDir: string, nowMs: number): { type: string; subject: string; data: ModelEventData }[] {
  let outageFile: string | undefined;
  if (scenario.outage !== undefined) {
    outageFile = join(dir, 'outage.json');
    const fromMs = nowMs + scenario.outage.fromMs;
    writeFileSync(outageFile, JSON.stringify({ [scenario.outage.handler]: { fromMs, untilMs: fromMs + scenario.outage.durationMs } }));
  }
  return scenario.events.map((e) => {
    const handlers = HANDLERS_OF_TYPE[e.type] ?? [];
    const plan = Object.fromEntries(Object.entries(e.plan).filter(([handler]) => handlers.includes(handler)));
    return {
      type: e.type,
      subject: `subject-${e.subject}`,
      data: { runsDir, plan, workMs: e.workMs, ...(outageFile === undefined ? {} : { outageFile }) },
    };
  });
}

/** A one-line summary of a scenario, for logs and failure messages (the events are in the counterexample). */
export function describeScenario(s: Scenario): string {
  const failing = s.events.filter((e) => Object.entries(e.plan).some(([h, p]) => (HANDLERS_OF_TYPE[e.type] ?? []).includes(h) && p.kind !== 'ok')).length;
  const outage = s.outage === undefined ? 'no outage' : `outage of ${s.outage.handler} ${s.outage.fromMs}+${s.outage.durationMs} ms`;
  return `${s.events.length} events (${failing} with failures) over ${s.subjects} subject(s), types ${[...new Set(s.events.map((e) => e.type))].join('/')}, limit ${s.limit}, workers ${s.workers}, concurrency ${s.concurrency}, max-in-progress ${s.maxInProgress ?? 'default'}, max-leases ${s.maxLeases ?? 'default'}, isolation ${s.isolation}, store ${s.store}, max-attempts ${s.maxAttempts}, breaker ${s.breaker ? `on (cool-down ${s.breakerCooldownMs} ms)` : 'off'}, ${outage}`;
}
