import type { FailOnceResult, LaterResult } from './waits.js';
import type { IsolationResult, Timeliness } from './isolation.js';
import type { OutageResult } from './outage.js';
import type { PoisonResult, PoisonRun } from './poison.js';

const n = (x: number | undefined, digits = 1) => (x === undefined ? 'never' : x.toFixed(digits));

/** The outage run in a few lines: what the targets ask, then what the worker did meanwhile. */
export function formatOutage(label: string, r: OutageResult): string {
  const o = r.options;
  return [
    `outage ${label}: ${r.appended} events over ${o.produceSeconds} s (${o.subjects} subjects), dependency down ${o.outageStartSeconds}-${o.outageStartSeconds + o.outageSeconds} s, latency ${o.latencyMs} ms, breaker ${o.breaker ? 'on' : 'off'}`,
    `  dead letters ${r.deadLetters}, lost ${r.lost}, duplicates ${r.duplicates}, cursor ${r.cursorAtHead ? 'at head' : 'NOT at head'}, worker exit ${r.workerExit}`,
    `  during the outage: ${n(r.pullsPerSecondDuring, 2)} pulls/s (max ${r.maxPullsInASecondDuring} in a second), ${n(r.requeuedAcksPerSecondDuring, 2)} requeued acks/s (max ${r.maxRequeuedAcksInASecondDuring}), ${r.failedRunsDuring} failed runs`,
    `  throughput before ${n(r.beforeEventsPerSecond)} events/s; after the return, per second: ${r.afterEventsPerSecond.map((x) => x.toFixed(0)).join(' ')}`,
    `  first effect ${n(r.firstEffectAfterSeconds, 2)} s after the return, >= 80 % of before within ${r.recoverySeconds ?? 'never'} s, backlog worked off after ${n(r.caughtUpSeconds)} s`,
    `  whole run: ${r.pulls} pulls, ${r.requeuedAcks} requeued acks, ${r.failedRuns} failed runs, churn ${n(r.churn, 3)} requeued acks per failed run`,
  ].join('\n');
}

function poisonRunLine(name: string, p: PoisonRun): string {
  return `  ${name}: ${p.appended} events, dead letters ${p.deadLetters.length}, lost ${p.lost}, duplicates ${p.duplicates}, cursor ${p.cursorAtHead ? 'at head' : 'NOT at head'}, ${p.pulls} pulls, ${p.requeuedAcks} requeued acks, ${p.failedRuns} failed runs, churn ${n(p.churn, 3)}, worker exit ${p.workerExit}`;
}

export function formatPoison(label: string, r: PoisonResult): string {
  const o = r.options;
  return [
    `poison ${label}: ${o.seconds} s of production over ${o.subjects} subjects (backlog ${o.backlog}), poison subject events at ${o.poisonAtSeconds.join(', ')} s, latency ${o.latencyMs} ms`,
    poisonRunLine('baseline', r.baseline),
    poisonRunLine('poisoned', r.poisoned),
    `  others while the poison backs off (${n(r.windowMs[0] / 1_000)}-${n(r.windowMs[1] / 1_000)} s): ${n(r.othersEventsPerSecondPoisoned)} events/s against ${n(r.othersEventsPerSecondBaseline)} without poison (${n(100 * r.othersRatio)} %)`,
    `  poison dead-lettered: ${r.poisonDeadLettered.map((d) => `attempt ${d.attempt} after ${n(d.seconds)} s`).join('; ') || 'none'}`,
  ].join('\n');
}

function timelinessLine(t: Timeliness): string {
  return `${t.events} events, ${n(100 * t.within2s)} % within 2 s, p50 ${n(t.p50Ms, 0)} ms, p99 ${n(t.p99Ms, 0)} ms, ${n(t.perSecond)} effects/s`;
}

/** Two handlers, one's dependency down: the healthy one's timeliness before and during, the flaky one's fate. */
export function formatIsolation(label: string, r: IsolationResult): string {
  const o = r.options;
  return [
    `isolation ${label}: ${r.appended} events at ${o.ratePerSecond}/s over ${o.produceSeconds} s, ${o.sharedType ? 'one type (both handlers on every event)' : 'two types (half each)'}, ${r.store} store, flaky's dependency down ${o.outageStartSeconds}-${o.outageStartSeconds + o.outageSeconds} s, latency ${o.latencyMs} ms`,
    `  healthy before: ${timelinessLine(r.healthyBefore)}`,
    `  healthy during: ${timelinessLine(r.healthyDuring)}`,
    `  healthy during / before: share within 2 s ${n(r.shareRatio, 2)}, rate ${n(r.rateRatio, 2)}; duplicates ${r.healthyDuplicates}`,
    `  flaky: ${r.flaky.effected} of ${r.flaky.events} events took effect, duplicates ${r.flaky.duplicates}, ${r.flaky.failedRuns} failed runs, drained ${n(r.flaky.drainedAfterReturnSeconds)} s after the return; dead letters ${r.deadLetters}, cursor ${r.cursorAtHead ? 'at head' : 'NOT at head'}, worker exit ${r.workerExit}`,
  ].join('\n');
}

export function formatLater(label: string, r: LaterResult): string {
  const o = r.options;
  const w = r.waiting;
  return [
    `waits ${label}: ${r.appended} events at ${o.ratePerSecond}/s over ${o.produceSeconds} s, each on its own subject; from ${o.laterFromSeconds} s every 10th asks to wait 15 s once`,
    `  others before: ${timelinessLine(r.before)}`,
    `  others after:  ${timelinessLine(r.after)}`,
    `  others after / before: share within 2 s ${n(r.shareRatio, 2)}; duplicates ${r.plainDuplicates}`,
    `  waiting: ${w.ranAgain} of ${w.events} ran again, ${n(w.minSeconds)}-${n(w.maxSeconds)} s after their first run, ${w.within15to35} within 15-35 s; dead letters ${r.deadLetters}, cursor ${r.cursorAtHead ? 'at head' : 'NOT at head'}`,
  ].join('\n');
}

export function formatFailOnce(label: string, r: FailOnceResult): string {
  return [
    `fail-once ${label}: ${r.events} events at once, every 10th failing its first run, 3 always failing, --max-attempts 3`,
    `  done ${n(r.doneSeconds)} s after the append (target: 1 s + 2 s of backoff + 5 s = 8 s); ${r.effects} effects, ${r.duplicates} duplicates; dead-lettered: ${r.deadLettered.join(', ') || 'none'}; cursor ${r.cursorAtHead ? 'at head' : 'NOT at head'}`,
  ].join('\n');
}
