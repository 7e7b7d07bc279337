import { join } from 'node:path';
import type { DependencyCall } from './dependency.js';
import { timeliness, type Timeliness } from './isolation.js';
import { REPO_ROOT } from './processes.js';
import { produceSteadily, runOnce } from './run.js';

/**
 * Waits and poison events that stay where they happen, measured with the handler of
 * bench/outage/wait-handlers (its behaviour is the event's subject):
 *
 * - `later`: a steady stream, each event on its own subject; from `laterFromSeconds` on, every 10th
 *   event asks to wait 15 s on its first run (RetryLaterError). The others' timeliness before and
 *   after, and when each waiting event ran again.
 * - `fail-once`: 1,000 events appended at once, every 10th failing its first run, 3 always failing,
 *   `--max-attempts 3`: how long until everything is done (effects in, poison dead-lettered).
 */
const HANDLERS = join(REPO_ROOT, 'bench/outage/wait-handlers');
const TYPE = 'waits.test';

export interface LaterOptions {
  ratePerSecond: number;
  produceSeconds: number;
  laterFromSeconds: number;
  latencyMs: number;
  drainTimeoutSeconds: number;
}

export const DEFAULT_LATER: LaterOptions = { ratePerSecond: 200, produceSeconds: 30, laterFromSeconds: 4, latencyMs: 0, drainTimeoutSeconds: 120 };

export interface LaterResult {
  options: LaterOptions;
  appended: number;
  before: Timeliness;
  after: Timeliness;
  /** after.within2s / before.within2s. */
  shareRatio: number;
  /** The events that asked to wait: how many, how many ran again, and the delays (s) from first run to second. */
  waiting: { events: number; ranAgain: number; minSeconds: number | undefined; maxSeconds: number | undefined; within15to35: number };
  plainDuplicates: number;
  deadLetters: number;
  cursorAtHead: boolean;
}

const okByEvent = (calls: readonly DependencyCall[], handler: string): Map<string, DependencyCall> => {
  const out = new Map<string, DependencyCall>();
  for (const c of calls) if (c.ok && c.handler === handler && !out.has(c.eventId)) out.set(c.eventId, c);
  return out;
};

export async function runLater(options: Partial<LaterOptions> = {}): Promise<LaterResult> {
  const o = { ...DEFAULT_LATER, ...options };
  const count = o.ratePerSecond * o.produceSeconds;
  const laterFrom = o.ratePerSecond * o.laterFromSeconds;
  const isLater = (i: number) => i >= laterFrom && i % 10 === 3;
  const laterCount = Array.from({ length: count }, (_, i) => i).filter(isLater).length;
  const r = await runOnce(
    {
      workerArgs: [],
      latencyMs: o.latencyMs,
      delayMs: 5,
      drainTimeoutSeconds: o.drainTimeoutSeconds,
      handlersDir: HANDLERS,
      settled: (calls) => okByEvent(calls, 'later').size >= laterCount && okByEvent(calls, 'plain').size >= count - laterCount,
    },
    ({ platform, startedAtMs }) => produceSteadily(platform, startedAtMs, count, o.produceSeconds, (i) => `${TYPE}|${isLater(i) ? 'later' : 's'}-${i}`),
  );
  const plain = r.calls.filter((c) => c.handler === 'plain');
  const switchMs = r.startedAtMs + o.laterFromSeconds * 1_000;
  const before = timeliness(plain, r.startedAtMs + 1_000, switchMs);
  const after = timeliness(plain, switchMs, r.startedAtMs + o.produceSeconds * 1_000);
  const first = okByEvent(r.calls, 'later-first');
  const again = okByEvent(r.calls, 'later');
  const delays = [...again.values()].flatMap((c) => {
    const f = first.get(c.eventId);
    return f === undefined ? [] : [(c.atMs - f.atMs) / 1_000];
  });
  const plainOk = plain.filter((c) => c.ok);
  return {
    options: o,
    appended: r.appended,
    before,
    after,
    shareRatio: before.within2s === 0 ? 0 : after.within2s / before.within2s,
    waiting: {
      events: laterCount,
      ranAgain: again.size,
      minSeconds: delays.length === 0 ? undefined : Math.min(...delays),
      maxSeconds: delays.length === 0 ? undefined : Math.max(...delays),
      within15to35: delays.filter((s) => s >= 15 && s <= 35).length,
    },
    plainDuplicates: plainOk.length - new Set(plainOk.map((c) => c.eventId)).size,
    deadLetters: r.deadLetters.length,
    cursorAtHead: r.committed === r.head && r.head === r.appended,
  };
}

export interface FailOnceResult {
  events: number;
  /** Seconds from the append to the last effect or dead letter, whichever came last. */
  doneSeconds: number | undefined;
  effects: number;
  duplicates: number;
  deadLettered: string[];
  cursorAtHead: boolean;
}

export const POISON_INDEXES = [100, 500, 900];

export async function runFailOnce(latencyMs = 0): Promise<FailOnceResult> {
  const count = 1_000;
  const subject = (i: number) => (POISON_INDEXES.includes(i) ? `poison-${i}` : i % 10 === 3 ? `once-${i}` : `s-${i}`);
  let appendedAtMs = 0;
  const r = await runOnce(
    {
      workerArgs: ['--max-attempts', '3'],
      latencyMs,
      delayMs: 5,
      drainTimeoutSeconds: 60,
      handlersDir: HANDLERS,
      settled: (calls, deadLetters) =>
        new Set(calls.filter((c) => c.ok).map((c) => c.eventId)).size >= count - POISON_INDEXES.length && deadLetters().length >= POISON_INDEXES.length,
    },
    async ({ platform }) => {
      appendedAtMs = Date.now();
      await platform.append(Array.from({ length: count }, (_, i) => `${TYPE}|${subject(i)}`));
    },
  );
  const ok = r.calls.filter((c) => c.ok);
  const lastEffectMs = ok.reduce((max, c) => Math.max(max, c.atMs), 0);
  const lastDeadMs = r.deadLetters.reduce((max, d) => Math.max(max, d.deadLetteredAt === undefined ? 0 : Date.parse(d.deadLetteredAt)), 0);
  const effects = new Set(ok.map((c) => c.eventId)).size;
  const done = effects >= count - POISON_INDEXES.length && r.deadLetters.length >= POISON_INDEXES.length;
  return {
    events: count,
    doneSeconds: done ? (Math.max(lastEffectMs, lastDeadMs) - appendedAtMs) / 1_000 : undefined,
    effects,
    duplicates: ok.length - effects,
    deadLettered: r.deadLetters.map((d) => d.event.subject ?? d.event.id).sort(),
    cursorAtHead: r.committed === r.head && r.head === r.appended,
  };
}
