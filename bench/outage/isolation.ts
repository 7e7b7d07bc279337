import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { DependencyCall } from './dependency.js';
import { REPO_ROOT } from './processes.js';
import { outageBetween, produceSteadily, runOnce, type RunRecord } from './run.js';

/**
 * Failures stay where they happen, measured: two handlers, one stream; the dependency of one of
 * them (`flaky`) goes down while the other's (`healthy`) stays up. Either the two handle different
 * event types (half the events each) or both handle every event (a shared type).
 */
export interface IsolationOptions {
  /** Events per second, produced steadily. */
  ratePerSecond: number;
  /** Production lasts this long; the outage starts after `outageStartSeconds` and lasts `outageSeconds`. */
  produceSeconds: number;
  outageStartSeconds: number;
  outageSeconds: number;
  /** Both handlers on every event (one type), or each on half (two types). */
  sharedType: boolean;
  subjects: number;
  /** The dependency's work per call. */
  delayMs: number;
  latencyMs: number;
  /** `--idempotency` (default: a SQLite file); a redis:// or postgres:// URL gets a prefix of its own. */
  idempotencyUrl?: string;
  drainTimeoutSeconds: number;
  keepDir?: boolean;
  /** More `run` flags (e.g. `--isolation none`). */
  workerArgs?: string[];
}

export const DEFAULT_ISOLATION: IsolationOptions = {
  ratePerSecond: 300,
  produceSeconds: 35,
  outageStartSeconds: 10,
  outageSeconds: 15,
  sharedType: false,
  subjects: 1_000,
  delayMs: 5,
  latencyMs: 0,
  drainTimeoutSeconds: 120,
};

/** The healthy handler's events in one phase: how soon after their append they took effect. */
export interface Timeliness {
  events: number;
  /** Share of the phase's events whose effect came within 2 s of their append. */
  within2s: number;
  p50Ms: number | undefined;
  p99Ms: number | undefined;
  /** Effects per second of the phase. */
  perSecond: number;
}

export interface IsolationResult {
  options: IsolationOptions;
  store: string;
  appended: number;
  healthyBefore: Timeliness;
  healthyDuring: Timeliness;
  /** healthyDuring.within2s / healthyBefore.within2s. */
  shareRatio: number;
  /** healthyDuring.perSecond / healthyBefore.perSecond. */
  rateRatio: number;
  /** The flaky handler's fate. */
  flaky: { events: number; effected: number; duplicates: number; failedRuns: number; drainedAfterReturnSeconds: number | undefined };
  deadLetters: number;
  healthyDuplicates: number;
  cursorAtHead: boolean;
  workerExit: number | null;
}

function percentile(sorted: readonly number[], p: number): number | undefined {
  if (sorted.length === 0) return undefined;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

export function timeliness(calls: readonly DependencyCall[], fromMs: number, toMs: number): Timeliness {
  // Each event once: its first effect, for events appended in [fromMs, toMs).
  const first = new Map<string, DependencyCall>();
  for (const c of calls)
    if (c.ok && c.publishedAtMs !== undefined && c.publishedAtMs >= fromMs && c.publishedAtMs < toMs && !first.has(c.eventId)) first.set(c.eventId, c);
  const latencies = [...first.values()].map((c) => c.atMs - (c.publishedAtMs as number)).sort((a, b) => a - b);
  const effects = calls.filter((c) => c.ok && c.atMs >= fromMs && c.atMs < toMs).length;
  return {
    events: latencies.length,
    within2s: latencies.length === 0 ? 0 : latencies.filter((ms) => ms <= 2_000).length / latencies.length,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    perSecond: effects / Math.max(0.001, (toMs - fromMs) / 1_000),
  };
}

export async function runIsolation(options: Partial<IsolationOptions> = {}): Promise<IsolationResult> {
  const o = { ...DEFAULT_ISOLATION, ...options };
  const downMs = o.outageStartSeconds * 1_000;
  const upMs = downMs + o.outageSeconds * 1_000;
  const shared = o.idempotencyUrl !== undefined && !o.idempotencyUrl.startsWith('sqlite:');
  const count = o.ratePerSecond * o.produceSeconds;
  const record: RunRecord = await runOnce(
    {
      workerArgs: [...(shared ? ['--idempotency-prefix', `bench-isolation-${randomUUID()}`] : []), ...(o.workerArgs ?? [])],
      latencyMs: o.latencyMs,
      delayMs: o.delayMs,
      drainTimeoutSeconds: o.drainTimeoutSeconds,
      handlersDir: join(REPO_ROOT, 'bench/outage/isolation-handlers'),
      downFor: 'flaky',
      // Every flaky event took effect: its retries are deferred runs, which outlive the cursor.
      settled: (calls) =>
        new Set(calls.filter((c) => c.handler === 'flaky' && c.ok).map((c) => c.eventId)).size >= (o.sharedType ? count : Math.floor(count / 2)),
      ...(o.idempotencyUrl === undefined ? {} : { idempotencyUrl: o.idempotencyUrl }),
      ...(o.keepDir === true ? { keepDir: true } : {}),
    },
    async ({ platform, dependency, startedAtMs }) => {
      const outage = outageBetween(dependency, startedAtMs, downMs, upMs);
      const type = (i: number) => (o.sharedType ? 'iso.ab' : i % 2 === 0 ? 'iso.a' : 'iso.b');
      await produceSteadily(platform, startedAtMs, count, o.produceSeconds, (i) => `${type(i)}|s-${i % o.subjects}`);
      await outage;
    },
  );
  const r = record;
  const healthy = r.calls.filter((c) => c.handler === 'healthy');
  const flaky = r.calls.filter((c) => c.handler === 'flaky');
  // Before: from the second second (the worker warmed up) to the outage.
  const before = timeliness(healthy, r.startedAtMs + 1_000, r.startedAtMs + downMs);
  const during = timeliness(healthy, r.startedAtMs + downMs, r.startedAtMs + upMs);
  const flakyEvents = o.sharedType ? r.appended : Math.floor(r.appended / 2);
  const flakyOk = flaky.filter((c) => c.ok);
  const flakyDistinct = new Set(flakyOk.map((c) => c.eventId));
  const lastFlaky = flakyOk.reduce((max, c) => Math.max(max, c.atMs), 0);
  const healthyOk = healthy.filter((c) => c.ok);
  return {
    options: o,
    store: o.idempotencyUrl === undefined ? 'sqlite' : o.idempotencyUrl.split(':')[0]!,
    appended: r.appended,
    healthyBefore: before,
    healthyDuring: during,
    shareRatio: before.within2s === 0 ? 0 : during.within2s / before.within2s,
    rateRatio: before.perSecond === 0 ? 0 : during.perSecond / before.perSecond,
    flaky: {
      events: flakyEvents,
      effected: flakyDistinct.size,
      duplicates: flakyOk.length - flakyDistinct.size,
      failedRuns: flaky.length - flakyOk.length,
      drainedAfterReturnSeconds: flakyDistinct.size >= flakyEvents ? (lastFlaky - r.startedAtMs - upMs) / 1_000 : undefined,
    },
    deadLetters: r.deadLetters.length,
    healthyDuplicates: healthyOk.length - new Set(healthyOk.map((c) => c.eventId)).size,
    cursorAtHead: r.committed === r.head && r.head === r.appended,
    workerExit: r.workerExit,
  };
}
