import { randomUUID } from 'node:crypto';
import { mkdirSync, readdirSync, watch } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { CliProcess, waitReady } from '../cli/cli-process.js';
import { underCi } from '../fixtures/ci.js';
import { runArgs as sharedRunArgs } from '../scale/effects.js';
import { consumerState, createConsumer, tempDir, untilSettled, waitFor } from '../worker/harness.js';
import type { RunLine } from '../fixtures/model-handlers/_plan.js';
import { checkInvariant, describeViolations, keyOf } from './invariant.js';
import { checkModel } from './model-check.js';
import { readDeadLetterLines, readRunFile, readRuns, runStats } from './observe.js';
import { appendOverHttp, expectedHandlers, MODEL_HANDLERS } from './run-scenario.js';
import { BATCH_HANDLERS, describeScenario, eventsOf, RETRY_BACKOFF_MAX_MS, RETRY_BACKOFF_MIN_MS, scenarioArb, type Scenario } from './scenario.js';

/**
 * The model test's invariant (test/model/invariant.ts) across two `durable-worker run` processes
 * sharing one Redis (then PostgreSQL) idempotency store, one of them SIGKILLed mid-run and
 * restarted under the same worker ids: the attempts of an event for a handler are carried over
 * between processes and over the kill, never reset, never counted twice.
 *
 * The kill's tolerance is exact: only an (event, handler) in flight at the kill, i.e. one the killed
 * process ran under a lease it still held when it died, may have lost the bookkeeping of that run
 * (its done mark: the effect runs again; or its failure's count: one extra run). Such a lease is a
 * platform lease it held (read from the emulator at the kill), or one its deferred runner started
 * within a visibility before the kill (`deferred-<n>`: the store's runs, held until their deadline).
 * Every other pair is held to the strict invariant.
 */
const STORES = [
  { name: 'redis', variable: 'REDIS_URL', url: process.env.REDIS_URL },
  { name: 'postgres', variable: 'DATABASE_URL', url: process.env.DATABASE_URL },
] as const;
const FILE = 'test/model/shared-store.test.ts';
const VISIBILITY_SECONDS = 3;

describe('shared-store model test environment', () => {
  for (const store of STORES) {
    // CI must exercise the real stores: a missing variable fails there instead of skipping quietly.
    it.runIf(underCi())(`has ${store.variable} in CI`, () => {
      expect(store.url, `${store.variable} must be set in CI (eval "$(bash .ci/services.sh)")`).toBeTruthy();
    });
    if (store.url === undefined) console.warn(`[model] ${store.name} shared-store model test skipped: ${store.variable} is not set`);
  }
});

let emulator: RunningEmulator;
const children: CliProcess[] = [];

beforeAll(async () => {
  emulator = await startEmulator({ port: 0 });
});
afterEach(() => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
});
afterAll(async () => {
  await emulator?.close();
});

/** The retry and breaker flags of a scenario, passed only once `run` knows them. */
function failureFlags(scenario: Scenario): string[] {
  const flags = [
    '--retry-backoff-min',
    `${RETRY_BACKOFF_MIN_MS}ms`,
    '--retry-backoff-max',
    `${RETRY_BACKOFF_MAX_MS}ms`,
    '--breaker-cooldown',
    `${scenario.breakerCooldownMs}ms`,
  ];
  if (!scenario.breaker) flags.push('--no-breaker');
  return flags;
}

function runArgs(scenario: Scenario, destination: string, dir: string, storeUrl: string, prefix: string, workerIdPrefix: string): string[] {
  return [
    ...sharedRunArgs(emulator, destination, dir, {
      handlers: MODEL_HANDLERS,
      'log-level': 'info',
      workers: scenario.workers,
      limit: scenario.limit,
      concurrency: scenario.concurrency,
      ...(scenario.maxInProgress === undefined ? {} : { 'max-in-progress': scenario.maxInProgress }),
      ...(scenario.maxLeases === undefined ? {} : { 'max-leases': scenario.maxLeases }),
      isolation: scenario.isolation,
      'max-attempts': scenario.maxAttempts,
      visibility: VISIBILITY_SECONDS,
      'shutdown-timeout': 1,
      idempotency: storeUrl,
      'idempotency-prefix': prefix,
      // The shared servers outlive the test: let its keys expire soon.
      'idempotency-ttl': '10m',
      'worker-id-prefix': workerIdPrefix,
    }),
    ...failureFlags(scenario),
  ];
}

/**
 * Resolves at the kill point with the process to kill: a third of the pairs have run at least once,
 * and one of `pids` has a pair it failed that is not over (no ok, no permanent failure, attempts
 * left). Either process may be it: which one gets the first leases is a race, and one may get none.
 * Such a failure is open only for its retry's backoff, tens of milliseconds, which a poll can miss
 * for every failure of a run; so each pair is looked at when its file is written, and the point is
 * seen when it happens.
 */
function untilKillPoint(runsDir: string, pairs: number, pids: readonly number[], maxAttempts: number, timeoutMs: number): Promise<number> {
  const run = new Set<string>();
  /** The pairs that are failed and not over, by file name, with the process that ran their last failure. */
  const open = new Map<string, number>();
  let ended = false;
  return new Promise((resolve, reject) => {
    const end = (outcome: number | Error) => {
      ended = true;
      clearTimeout(timer);
      watcher.close();
      if (typeof outcome === 'number') resolve(outcome);
      else reject(outcome);
    };
    const look = (name: string) => {
      if (ended) return;
      const list = readRunFile(join(runsDir, name));
      if (list.length > 0) run.add(name);
      const failed = list.filter((r) => r.outcome !== 'ok' && pids.includes(r.pid));
      const over = list.some((r) => r.outcome === 'ok' || r.outcome === 'permanent') || failed.length >= maxAttempts;
      if (!over && failed.length > 0) open.set(name, (failed.at(-1) as RunLine).pid);
      else open.delete(name);
      const [pid] = open.values();
      if (run.size >= pairs / 3 && pid !== undefined) end(pid);
    };
    const watcher = watch(runsDir, (_change, name) => {
      if (name !== null) look(name);
    });
    const timer = setTimeout(
      () =>
        end(
          new Error(
            `timed out after ${timeoutMs} ms waiting for a third of the pairs run and a failure not over: ${run.size} of ${pairs} pair(s) run, ${open.size} open`,
          ),
        ),
      timeoutMs,
    );
    for (const name of readdirSync(runsDir)) look(name);
  });
}

/** The (event, handler) pairs with no ok, no permanent failure and attempts left. */
function pairsNotOver(runs: readonly RunLine[], expected: ReadonlyMap<string, readonly string[]>, maxAttempts: number): number {
  const byKey = new Map<string, RunLine[]>();
  for (const run of runs) byKey.set(keyOf(run.handler, run.eventId), [...(byKey.get(keyOf(run.handler, run.eventId)) ?? []), run]);
  let notOver = 0;
  for (const [eventId, handlers] of expected) {
    for (const handler of handlers) {
      const list = byKey.get(keyOf(handler, eventId)) ?? [];
      const over = list.some((r) => r.outcome === 'ok' || r.outcome === 'permanent') || list.filter((r) => r.outcome !== 'ok').length >= maxAttempts;
      if (!over) notOver += 1;
    }
  }
  return notOver;
}

async function killAndRestart(scenario: Scenario, storeUrl: string): Promise<void> {
  const dir = tempDir('model-shared');
  const runsDir = join(dir, 'runs');
  mkdirSync(runsDir);
  const destination = await createConsumer(emulator, 'model-shared');
  // One key namespace for both processes: that is what makes the store shared.
  const prefix = `model-${randomUUID()}`;
  const start = (workerIdPrefix: string) => {
    const child = new CliProcess(runArgs(scenario, destination, dir, storeUrl, prefix, workerIdPrefix));
    children.push(child);
    return child;
  };
  const first = [
    { workerIdPrefix: 'model-a', process: start('model-a') },
    { workerIdPrefix: 'model-b', process: start('model-b') },
  ];
  await Promise.all(first.map(({ process }) => waitReady(process)));
  const appended = await appendOverHttp(emulator, eventsOf(scenario, dir, runsDir, Date.now()));
  const expected = expectedHandlers(scenario, appended);
  const pairs = [...expected.values()].reduce((n, handlers) => n + handlers.length, 0);

  // Mid-run, the process to kill has a pair it failed that is not over yet: the kill is sure to
  // leave attempts for another process to carry.
  const killedPid = await untilKillPoint(
    runsDir,
    pairs,
    first.map(({ process }) => process.child.pid as number),
    scenario.maxAttempts,
    60_000,
  );
  const killed = first.find(({ process }) => process.child.pid === killedPid) as (typeof first)[number];
  const survivor = first.find((one) => one !== killed) as (typeof first)[number];
  const killedAtMs = Date.now();
  killed.process.kill('SIGKILL');
  expect((await killed.process.exited).signal).toBe('SIGKILL');
  // The leases the killed process held: they stay its until they expire, and nobody else runs under
  // its worker ids until the restart below. Its runs under them are the ones in flight at the kill.
  const killedLeases = new Set(
    consumerState(emulator, destination)
      .leases.filter((lease) => lease.workerId?.startsWith(`${killed.workerIdPrefix}-`) === true)
      .map((lease) => lease.leaseId),
  );
  // The cursor may be at the head already (deferred runs wait in the store, not in leases): what must
  // be left at the kill is a pair not over, one the restart or the survivor still has to run.
  expect(pairsNotOver(readRuns(runsDir), expected, scenario.maxAttempts), 'the run was over before the kill').toBeGreaterThan(0);

  // Restarted under the same worker ids: it pulls the killed process's leases back.
  const restarted = start(killed.workerIdPrefix);
  await waitReady(restarted);
  // The cursor at the head and no run left deferred in the store (or the deadline: the invariant says what is missing).
  await untilSettled(emulator, destination, { idempotencyUrl: storeUrl, idempotencyPrefix: prefix }, 90_000).catch(() => undefined);
  survivor.process.kill('SIGTERM');
  restarted.kill('SIGTERM');
  const ends = await Promise.all([survivor.process.exited, restarted.exited]);

  const runs = readRuns(runsDir);
  const deadLetters = readDeadLetterLines(join(dir, 'dead-letter.jsonl'));
  // A run of the deferred runner is in a lease of the process's own, which no platform lists.
  const heldAtKill = (r: RunLine) => killedLeases.has(r.leaseId) || (r.leaseId.startsWith('deferred-') && r.startMs >= killedAtMs - VISIBILITY_SECONDS * 1_000);
  const tolerated = new Set(runs.filter((r) => r.pid === killedPid && heldAtKill(r)).map((r) => keyOf(r.handler, r.eventId)));
  const state = consumerState(emulator, destination);
  const violations = checkInvariant(
    { expected, runs, deadLetters, cursor: { committed: state.committed, head: state.head }, tolerated: { pid: killedPid, keys: tolerated } },
    { maxAttempts: scenario.maxAttempts, retryBackoffMinMs: RETRY_BACKOFF_MIN_MS, retryBackoffMaxMs: RETRY_BACKOFF_MAX_MS, batchHandlers: BATCH_HANDLERS },
  );
  // The scenario exercised what it is about: failed runs of one process continued by another.
  const byKey = new Map<string, typeof runs>();
  for (const run of runs.slice().sort((x, y) => x.startMs - y.startMs))
    byKey.set(keyOf(run.handler, run.eventId), [...(byKey.get(keyOf(run.handler, run.eventId)) ?? []), run]);
  const carried = [...byKey.values()].filter((list) =>
    list.some((run, i) => run.outcome !== 'ok' && list.slice(i + 1).some((later) => later.pid !== run.pid)),
  ).length;
  const summary = `${describeScenario(scenario)}\n${runStats(runs, deadLetters)}; ${carried} pair(s) whose failures moved between processes; ${tolerated.size} pair(s) in flight at the kill; files in ${dir}`;
  console.log(`[model] ${summary}`);
  const exits = ends.map((end) => (end.code === 0 ? undefined : `exit ${end.code}: ${end.stderr.slice(-2_000)}`)).filter(Boolean);
  if (violations.length > 0 || exits.length > 0 || carried === 0) {
    throw new Error(
      `${summary}\n${carried === 0 ? 'no failed run was continued by another process\n' : ''}${exits.join('\n')}\n${describeViolations(violations)}`,
    );
  }
}

for (const store of STORES) {
  describe.skipIf(store.url === undefined)(`model invariant across two processes sharing ${store.name}`, () => {
    it('one process SIGKILLed and restarted mid-run: attempts carried over, none reset, none double-counted', async () => {
      const scenarios = scenarioArb({ minEvents: 250, maxEvents: 300, weights: { failingPercent: 15 }, outage: false, workMs: [5, 15] })
        // Enough subjects and in-flight room that the kill finds work under way in several leases.
        .filter((s) => s.subjects >= 5 && s.limit >= 5);
      await checkModel(scenarios, (scenario) => killAndRestart(scenario, store.url as string), { testFile: FILE, defaultRuns: 1, noShrink: true });
    }, 300_000);
  });
}
