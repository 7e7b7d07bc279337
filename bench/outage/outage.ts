import { effectsPerSecond, outageBetween, produceSteadily, runOnce, sampleAt, tally, type RunRecord } from './run.js';

export interface OutageOptions {
  events: number;
  /** Subjects (entry ids) the events cycle over. */
  subjects: number;
  /** The events are produced steadily over this many seconds. */
  produceSeconds: number;
  /** The dependency goes down this long after production starts, for `outageSeconds`. */
  outageStartSeconds: number;
  outageSeconds: number;
  /** Added by the emulator before each pull and each ack (0: loopback). */
  latencyMs: number;
  /** false: the worker runs with --no-breaker. */
  breaker: boolean;
  /** The dependency's work per call. */
  delayMs: number;
  drainTimeoutSeconds: number;
  /** More `run` flags (the smoke test's short backoff); none for the figures. */
  workerArgs?: string[];
  keepDir?: boolean;
}

export const DEFAULT_OUTAGE: OutageOptions = {
  events: 3_000,
  subjects: 300,
  produceSeconds: 100,
  outageStartSeconds: 20,
  outageSeconds: 60,
  latencyMs: 0,
  breaker: true,
  delayMs: 20,
  drainTimeoutSeconds: 120,
};

export interface OutageResult {
  options: OutageOptions;
  appended: number;
  deadLetters: number;
  /** Events neither taken effect nor dead-lettered. */
  lost: number;
  duplicates: number;
  cursorAtHead: boolean;
  beforeEventsPerSecond: number;
  pullsPerSecondDuring: number;
  requeuedAcksPerSecondDuring: number;
  /** The busiest second of the outage. */
  maxPullsInASecondDuring: number;
  maxRequeuedAcksInASecondDuring: number;
  failedRunsDuring: number;
  /** Effects in each second after the dependency came back (the first 10). */
  afterEventsPerSecond: number[];
  /** Seconds from the return until the first effect. */
  firstEffectAfterSeconds: number | undefined;
  /** The end of the first 1-s window after the return with >= 80 % of the rate before. */
  recoverySeconds: number | undefined;
  /** Seconds from the return until the backlog was worked off (effects and dead letters within a second's production of the events produced). */
  caughtUpSeconds: number | undefined;
  failedRuns: number;
  requeuedAcks: number;
  pulls: number;
  /** Requeued acks per failed run over the whole run. */
  churn: number;
  workerExit: number | null;
}

/** A dependency outage in the middle of a steady stream. */
export async function runOutage(options: Partial<OutageOptions> = {}): Promise<OutageResult> {
  const o = { ...DEFAULT_OUTAGE, ...options };
  const downMs = o.outageStartSeconds * 1_000;
  const upMs = downMs + o.outageSeconds * 1_000;
  const record = await runOnce(
    {
      workerArgs: [...(o.breaker ? [] : ['--no-breaker']), ...(o.workerArgs ?? [])],
      latencyMs: o.latencyMs,
      delayMs: o.delayMs,
      drainTimeoutSeconds: o.drainTimeoutSeconds,
      ...(o.keepDir ? { keepDir: true } : {}),
    },
    async ({ platform, dependency, startedAtMs }) => {
      const outage = outageBetween(dependency, startedAtMs, downMs, upMs);
      await produceSteadily(platform, startedAtMs, o.events, o.produceSeconds, (i) => `entry-${i % o.subjects}`);
      await outage;
    },
  );
  return summarise(o, record, downMs, upMs);
}

function summarise(o: OutageOptions, r: RunRecord, downMs: number, upMs: number): OutageResult {
  const t = tally(r);
  const dead = new Set(r.deadLetters.map((d) => d.event.id));
  const effected = new Set(r.calls.filter((c) => c.ok).map((c) => c.eventId));
  const lost = r.appended - [...new Set([...effected, ...dead])].length;
  // Before: from the second second (the worker's first pulls) to the outage.
  const before = effectsPerSecond(r, Math.min(1_000, downMs / 2), downMs);
  const after = Array.from({ length: 10 }, (_, i) => effectsPerSecond(r, upMs + i * 1_000, upMs + (i + 1) * 1_000));
  const recoveryIndex = after.findIndex((rate) => rate >= 0.8 * before);
  const firstAfter = r.calls.find((c) => c.ok && c.atMs - r.startedAtMs >= upMs);
  const perSecondOfProduction = o.events / o.produceSeconds;
  // Caught up: the events that took effect or were dead-lettered are within a second's production
  // of those produced by then.
  const ends = [
    ...r.calls.filter((c) => c.ok).map((c) => ({ eventId: c.eventId, atMs: c.atMs })),
    ...r.deadLetters.map((d) => ({ eventId: d.event.id, atMs: Date.parse(d.lastFailedAt ?? '') })),
  ].sort((a, b) => a.atMs - b.atMs);
  const seen = new Set<string>();
  let caughtUpMs: number | undefined;
  for (const c of ends) {
    seen.add(c.eventId);
    const at = c.atMs - r.startedAtMs;
    const producedByThen = Math.min(o.events, (o.events * at) / (o.produceSeconds * 1_000));
    if (at >= upMs && seen.size >= producedByThen - perSecondOfProduction) {
      caughtUpMs = at;
      break;
    }
  }
  const during = r.samples.filter((s) => s.atMs >= downMs && s.atMs <= upMs);
  const steps = during.slice(1).map((s, i) => ({ pulls: s.pulls - during[i]!.pulls, requeued: s.requeuedAcks - during[i]!.requeuedAcks }));
  const atDown = sampleAt(r, downMs);
  const atUp = sampleAt(r, upMs);
  const spanSeconds = Math.max(1, (atUp.atMs - atDown.atMs) / 1_000);
  return {
    options: o,
    appended: r.appended,
    deadLetters: r.deadLetters.length,
    lost,
    duplicates: t.effects - t.distinct,
    cursorAtHead: r.committed === r.head && r.head === r.appended,
    beforeEventsPerSecond: before,
    pullsPerSecondDuring: (atUp.pulls - atDown.pulls) / spanSeconds,
    requeuedAcksPerSecondDuring: (atUp.requeuedAcks - atDown.requeuedAcks) / spanSeconds,
    maxPullsInASecondDuring: Math.max(0, ...steps.map((s) => s.pulls)),
    maxRequeuedAcksInASecondDuring: Math.max(0, ...steps.map((s) => s.requeued)),
    failedRunsDuring: r.calls.filter((c) => !c.ok && c.atMs - r.startedAtMs >= downMs && c.atMs - r.startedAtMs < upMs).length,
    afterEventsPerSecond: after,
    firstEffectAfterSeconds: firstAfter === undefined ? undefined : (firstAfter.atMs - r.startedAtMs - upMs) / 1_000,
    recoverySeconds: recoveryIndex < 0 ? undefined : recoveryIndex + 1,
    caughtUpSeconds: caughtUpMs === undefined ? undefined : (caughtUpMs - upMs) / 1_000,
    failedRuns: t.failedRuns,
    requeuedAcks: r.final.requeuedAcks,
    pulls: r.final.pulls,
    churn: t.failedRuns === 0 ? 0 : r.final.requeuedAcks / t.failedRuns,
    workerExit: r.workerExit,
  };
}
