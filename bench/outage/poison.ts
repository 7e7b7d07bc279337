import { setTimeout as sleep } from 'node:timers/promises';
import { effectsPerSecond, runOnce, tally, type DeadLetter, type RunRecord } from './run.js';

export interface PoisonOptions {
  /** Production lasts this long; the worker always has a backlog (capacity-bound). */
  seconds: number;
  /** Subjects (entry ids) of the healthy events. */
  subjects: number;
  /** Unconsumed events topped up to this many every 100 ms. */
  backlog: number;
  /** Events on the poison subject, appended at these seconds after the start, ahead of the backlog then (each always fails). */
  poisonAtSeconds: number[];
  latencyMs: number;
  delayMs: number;
  drainTimeoutSeconds: number;
  /** More `run` flags (the smoke test's short backoff); none for the figures. */
  workerArgs?: string[];
  keepDir?: boolean;
}

export const DEFAULT_POISON: PoisonOptions = {
  seconds: 40,
  subjects: 300,
  backlog: 2_000,
  poisonAtSeconds: [0, 0],
  latencyMs: 0,
  delayMs: 20,
  drainTimeoutSeconds: 120,
};

export const POISON_SUBJECT = 'entry-poison';

export interface PoisonRun {
  appended: number;
  deadLetters: DeadLetter[];
  lost: number;
  duplicates: number;
  cursorAtHead: boolean;
  failedRuns: number;
  requeuedAcks: number;
  pulls: number;
  churn: number;
  workerExit: number | null;
  record: RunRecord;
}

export interface PoisonResult {
  options: PoisonOptions;
  baseline: PoisonRun;
  poisoned: PoisonRun;
  /** [from, to) ms after the start: from the poison's first failed run to its last dead letter (or the end of production). */
  windowMs: [number, number];
  othersEventsPerSecondBaseline: number;
  othersEventsPerSecondPoisoned: number;
  /** Poisoned over baseline, in the window (target >= 0.9). */
  othersRatio: number;
  /** Per poison event: seconds from its first failed run to its dead letter, and its attempt then. */
  poisonDeadLettered: Array<{ seconds: number; attempt: number | undefined }>;
}

async function runPoisonOnce(o: PoisonOptions, poison: boolean): Promise<PoisonRun> {
  const record = await runOnce(
    {
      workerArgs: o.workerArgs ?? [],
      latencyMs: o.latencyMs,
      delayMs: o.delayMs,
      drainTimeoutSeconds: o.drainTimeoutSeconds,
      ...(poison ? { poisonSubject: POISON_SUBJECT } : {}),
      ...(o.keepDir ? { keepDir: true } : {}),
    },
    async ({ platform, startedAtMs, records }) => {
      const poisonTimes = o.poisonAtSeconds.map((s) => startedAtMs + s * 1_000);
      let produced = 0;
      for (let tick = 1; startedAtMs + tick * 100 <= startedAtMs + o.seconds * 1_000; tick++) {
        const now = Date.now();
        const subjects: string[] = [];
        while (poisonTimes.length > 0 && (poisonTimes[0] as number) <= now) {
          poisonTimes.shift();
          subjects.push(POISON_SUBJECT);
        }
        // The backlog as the effects show it: healthy events appended and not yet taken effect.
        const done = records().reduce((n, c) => n + (c.ok ? 1 : 0), 0);
        for (; produced - done < o.backlog; produced++) subjects.push(`entry-${produced % o.subjects}`);
        await platform.append(subjects);
        await sleep(Math.max(0, startedAtMs + tick * 100 - Date.now()));
      }
    },
  );
  const t = tally(record);
  const dead = new Set(record.deadLetters.map((d) => d.event.id));
  const effected = new Set(record.calls.filter((c) => c.ok).map((c) => c.eventId));
  return {
    appended: record.appended,
    deadLetters: record.deadLetters,
    lost: record.appended - new Set([...effected, ...dead]).size,
    duplicates: t.effects - t.distinct,
    cursorAtHead: record.committed === record.head && record.head === record.appended,
    failedRuns: t.failedRuns,
    requeuedAcks: record.final.requeuedAcks,
    pulls: record.final.pulls,
    churn: t.failedRuns === 0 ? 0 : record.final.requeuedAcks / t.failedRuns,
    workerExit: record.workerExit,
    record,
  };
}

/**
 * A poison subject in a saturated stream: the same production once without the poison (baseline)
 * and once with it; the other subjects' throughput while the poison backs off, compared.
 */
export async function runPoison(options: Partial<PoisonOptions> = {}): Promise<PoisonResult> {
  const o = { ...DEFAULT_POISON, ...options };
  const baseline = await runPoisonOnce(o, false);
  const poisoned = await runPoisonOnce(o, true);
  const r = poisoned.record;
  const poisonCalls = r.calls.filter((c) => c.subject === POISON_SUBJECT && !c.ok);
  const fromMs = (poisonCalls[0]?.atMs ?? r.startedAtMs) - r.startedAtMs;
  const lastMs = (poisonCalls.at(-1)?.atMs ?? r.startedAtMs) - r.startedAtMs;
  const windowMs: [number, number] = [fromMs, Math.min(lastMs, o.seconds * 1_000)];
  const others = (c: { subject: string }) => c.subject !== POISON_SUBJECT;
  const base = effectsPerSecond(baseline.record, windowMs[0], windowMs[1], others);
  const with_ = effectsPerSecond(r, windowMs[0], windowMs[1], others);
  const poisonDeadLettered = poisoned.deadLetters.map((d) => ({
    seconds: (Date.parse(d.lastFailedAt ?? '') - Date.parse(d.firstFailedAt ?? '')) / 1_000,
    attempt: d.attempt,
  }));
  return {
    options: o,
    baseline,
    poisoned,
    windowMs,
    othersEventsPerSecondBaseline: base,
    othersEventsPerSecondPoisoned: with_,
    othersRatio: base === 0 ? 0 : with_ / base,
    poisonDeadLettered,
  };
}
