import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { WorkerConfig } from '../../src/config/types.js';
import type { RunningEmulator } from '../../src/emulator/index.js';
import { startWorker } from '../../src/worker/start.js';
import { consumerState, createConsumer, FAST, silent, tempDir, TENANT, untilSettled, workerConfig } from '../worker/harness.js';
import { checkInvariant, describeViolations, type ModelOptions, type Observed, type Violation } from './invariant.js';
import { readDeadLetterLines, readRuns, runStats } from './observe.js';
import { BATCH_HANDLERS, eventsOf, HANDLERS_OF_TYPE, RETRY_BACKOFF_MAX_MS, RETRY_BACKOFF_MIN_MS, type Scenario } from './scenario.js';

export const MODEL_HANDLERS = fileURLToPath(new URL('../fixtures/model-handlers', import.meta.url));

/**
 * The failure-handling options of a scenario, as WorkerConfig fields. Cast: the config type gains
 * them with the worker's retry and breaker support; a worker without it ignores them.
 */
export function failureOptions(scenario: Scenario): Partial<WorkerConfig> {
  return {
    retryBackoffMinMs: RETRY_BACKOFF_MIN_MS,
    retryBackoffMaxMs: RETRY_BACKOFF_MAX_MS,
    breaker: scenario.breaker,
    breakerCooldownMs: scenario.breakerCooldownMs,
  };
}

/** Appends events over the emulator's seeding route: their ids and sequences, in order. */
export async function appendOverHttp(
  emulator: Pick<RunningEmulator, 'url'>,
  events: readonly { type: string; subject: string; data: unknown }[],
): Promise<{ id: string; sequence: string }[]> {
  const out: { id: string; sequence: string }[] = [];
  for (let i = 0; i < events.length; i += 1_000) {
    const response = await fetch(`${emulator.url}/_emulator/tenants/${TENANT}/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ events: events.slice(i, i + 1_000) }),
    });
    if (response.status !== 201) throw new Error(`appending events: ${response.status} ${await response.text()}`);
    out.push(...((await response.json()) as { events: { id: string; sequence: string }[] }).events);
  }
  return out;
}

export function expectedHandlers(scenario: Scenario, appended: readonly { id: string }[]): Map<string, readonly string[]> {
  return new Map(appended.map((e, i) => [e.id, HANDLERS_OF_TYPE[(scenario.events[i] as Scenario['events'][number]).type] ?? []]));
}

export interface ScenarioResult {
  observed: Observed;
  /** When the events were appended (an outage's window starts from here). */
  appendedAtMs: number;
  options: ModelOptions;
  violations: Violation[];
  stats: string;
}

/**
 * One scenario against one in-process worker: a fresh consumer, the events appended over HTTP, the
 * worker until the cursor is at the head (or a deadline), then the invariant over what it left.
 */
export async function runScenario(emulator: RunningEmulator, scenario: Scenario, deadlineMs = 40_000): Promise<ScenarioResult> {
  const dir = tempDir('model');
  const runsDir = join(dir, 'runs');
  mkdirSync(runsDir);
  const destination = await createConsumer(emulator, 'model');
  const config = workerConfig(emulator, destination, dir, {
    handlersDir: MODEL_HANDLERS,
    workers: scenario.workers,
    limit: scenario.limit,
    concurrency: scenario.concurrency,
    ...(scenario.maxInProgress === undefined ? {} : { maxInProgress: scenario.maxInProgress }),
    ...(scenario.maxLeases === undefined ? {} : { maxLeases: scenario.maxLeases }),
    isolation: scenario.isolation,
    maxAttempts: scenario.maxAttempts,
    visibilitySeconds: 10,
    ...failureOptions(scenario),
    ...(scenario.store === 'sqlite' ? { idempotencyUrl: `sqlite:${join(dir, 'store.db')}` } : {}),
  });
  const worker = await startWorker(config, { logger: silent, timings: FAST, healthServer: false });
  let appended: { id: string; sequence: string }[];
  const appendedAtMs = Date.now();
  try {
    appended = await appendOverHttp(emulator, eventsOf(scenario, dir, runsDir, appendedAtMs));
    // The cursor at the head and no run left deferred in the store (or the deadline: the invariant says what is missing).
    await untilSettled(emulator, destination, config, deadlineMs).catch(() => undefined);
  } finally {
    await worker.close();
  }
  const state = consumerState(emulator, destination);
  const observed: Observed = {
    expected: expectedHandlers(scenario, appended),
    runs: readRuns(runsDir),
    deadLetters: readDeadLetterLines(join(dir, 'dead-letter.jsonl')),
    cursor: { committed: state.committed, head: state.head },
    stream: appended.map((e, i) => ({ id: e.id, subject: String((scenario.events[i] as Scenario['events'][number]).subject) })),
  };
  const options: ModelOptions = {
    maxAttempts: scenario.maxAttempts,
    retryBackoffMinMs: RETRY_BACKOFF_MIN_MS,
    retryBackoffMaxMs: RETRY_BACKOFF_MAX_MS,
    batchHandlers: BATCH_HANDLERS,
    order: true,
  };
  return {
    observed,
    appendedAtMs,
    options,
    violations: checkInvariant(observed, options),
    stats: `${runStats(observed.runs, observed.deadLetters)}; files in ${dir}`,
  };
}

export function failureMessage(scenarioLine: string, result: ScenarioResult): string {
  return `${scenarioLine}\n${result.stats}\n${describeViolations(result.violations)}`;
}
