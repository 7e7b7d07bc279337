/**
 * The model test of the limits: random workloads (events, subjects, planned failures per handler,
 * work time, store, isolation) through a real worker and the emulator over HTTP, three limited
 * handlers on every event (test/fixtures/model-limits-handlers: `rated` 4 per 300 ms, `capped` 2 at
 * once, `keyed` 2 per 300 ms per subject). After each: no window over its limit, never more than 2
 * `capped` runs at once, and waits spend no attempts: each handler ran each event exactly its planned
 * failures + 1 times, with ctx.attempt 1, 2, ... in order; the cursor at the head.
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { describe, it } from 'vitest';
import { busiestWindow as busiest, mostOverlapping } from '../../bench/limits/measure.js';
import { startWorker } from '../../src/worker/start.js';
import { consumerState, createConsumer, emulatorForFile, FAST, silent, tempDir, untilSettled, workerConfig } from '../worker/harness.js';
import { checkModel } from './model-check.js';
import { appendOverHttp } from './run-scenario.js';

const t = emulatorForFile();
const HANDLERS = fileURLToPath(new URL('../fixtures/model-limits-handlers', import.meta.url));
const NAMES = ['rated', 'capped', 'keyed'] as const;

interface LimitsScenario {
  events: { subject: number; fail: Record<string, number>; workMs: number }[];
  store: 'memory' | 'sqlite';
  isolation: 'none' | 'thread';
}

const scenarioArb: fc.Arbitrary<LimitsScenario> = fc.record({
  events: fc.array(
    fc.record({
      subject: fc.nat({ max: 7 }),
      fail: fc.record({
        rated: fc.oneof({ weight: 4, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.integer({ min: 1, max: 2 }) }),
        capped: fc.constant(0),
        keyed: fc.oneof({ weight: 4, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.constant(1) }),
      }),
      workMs: fc.integer({ min: 0, max: 30 }),
    }),
    { minLength: 5, maxLength: 40 },
  ),
  store: fc.constantFrom('memory' as const, 'sqlite' as const),
  isolation: fc.constantFrom('none' as const, 'thread' as const),
});

interface RunLine {
  h: string;
  id: string;
  a: number;
  s: number;
  e: number;
  ok: boolean;
}

/** What went wrong in one scenario (empty: the invariant holds). */
async function violations(scenario: LimitsScenario): Promise<string[]> {
  const dir = tempDir('model-limits');
  const runsDir = join(dir, 'runs');
  mkdirSync(runsDir);
  const destination = await createConsumer(t.emulator, 'model-limits');
  const config = workerConfig(t.emulator, destination, dir, {
    handlersDir: HANDLERS,
    isolation: scenario.isolation,
    maxAttempts: 5,
    ...(scenario.store === 'sqlite' ? { idempotencyUrl: `sqlite:${join(dir, 'store.db')}` } : {}),
  });
  const worker = await startWorker(config, { logger: silent, timings: FAST, healthServer: false });
  let appended: { id: string }[];
  try {
    appended = await appendOverHttp(
      t.emulator,
      scenario.events.map((e) => ({ type: 'model.limits', subject: `s-${e.subject}`, data: { runsDir, fail: e.fail, workMs: e.workMs } })),
    );
    await untilSettled(t.emulator, destination, config, 60_000).catch(() => undefined);
  } finally {
    await worker.close();
  }
  const problems: string[] = [];
  const state = consumerState(t.emulator, destination);
  if (state.committed !== state.head) problems.push(`cursor ${state.committed} short of the head ${state.head}`);
  // A start that reaches a handler thread late may land in the next window's first moments.
  const slack = scenario.isolation === 'thread' ? 1 : 0;
  const subjectOf = new Map(appended.map((e, i) => [e.id, scenario.events[i]!.subject]));
  for (const name of NAMES) {
    const file = join(runsDir, `${name}.jsonl`);
    const runs = existsSync(file)
      ? readFileSync(file, 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l) as RunLine)
      : [];
    appended.forEach((event, i) => {
      const mine = runs.filter((r) => r.id === event.id).sort((x, y) => x.s - y.s);
      const planned = (scenario.events[i]!.fail[name] ?? 0) + 1;
      if (mine.length !== planned) problems.push(`${name} ran ${event.id} ${mine.length} times, planned ${planned}`);
      const attempts = mine.map((r) => r.a).join(',');
      const expected = mine.map((_, k) => k + 1).join(',');
      if (attempts !== expected) problems.push(`${name} on ${event.id}: attempts ${attempts}, expected ${expected} (a wait spent an attempt?)`);
    });
    if (
      name === 'rated' &&
      busiest(
        runs.map((r) => r.s),
        300,
      ) >
        4 + slack
    )
      problems.push(
        `rated: ${busiest(
          runs.map((r) => r.s),
          300,
        )} starts in a 300 ms window (max 4)`,
      );
    const atOnce = mostOverlapping(runs.map((r) => [r.s, r.e] as const));
    if (name === 'capped' && atOnce > 2) problems.push(`capped: ${atOnce} runs at once (max 2)`);
    if (name === 'keyed') {
      for (const subject of new Set(subjectOf.values())) {
        const starts = runs.filter((r) => subjectOf.get(r.id) === subject).map((r) => r.s);
        if (busiest(starts, 300) > 2 + slack) problems.push(`keyed: subject s-${subject} had ${busiest(starts, 300)} starts in a 300 ms window (max 2)`);
      }
    }
  }
  return problems.length === 0 ? [] : [...problems.slice(0, 10), `files in ${dir}`];
}

describe('limits, model-based', () => {
  it('random workloads keep every limit, and waiting for a permit spends no attempt', async () => {
    await checkModel(
      scenarioArb,
      async (scenario) => {
        const problems = await violations(scenario);
        if (problems.length > 0)
          throw new Error(`${scenario.events.length} events, ${scenario.store}, isolation ${scenario.isolation}\n${problems.join('\n')}`);
      },
      { testFile: 'test/model/limits.test.ts', defaultRuns: 4 },
    );
  }, 600_000);
});
