import type { ChaosReport } from './run.js';

const pct = (part: number, whole: number) => (whole === 0 ? '0' : ((100 * part) / whole).toFixed(2));
const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** The command that replays a run. */
export function replayCommand(r: ChaosReport): string {
  const o = r.options;
  return `npm run chaos -- --seed ${o.seed} --events ${o.events} --produce-seconds ${o.produceSeconds} --min-kills ${o.minKills} --isolation ${o.isolation}`;
}

/** One screen: what was done to the workers, what the records show, and the verdict. */
export function formatReport(r: ChaosReport): string {
  const o = r.options;
  const v = r.verdict;
  const bySlot = new Map<number, number>();
  for (const k of r.kills) bySlot.set(k.slot, (bySlot.get(k.slot) ?? 0) + 1);
  const killsBySlot = [...bySlot]
    .sort(([a], [b]) => a - b)
    .map(([slot, n]) => `slot ${slot} x${n}`)
    .join(', ');
  const total = r.counts.work + r.counts.flaky + r.counts.poison;
  const lines = [
    `chaos run      seed ${o.seed}   replay: ${replayCommand(r)}`,
    `workers        ${o.processes} processes x ${o.workersPerProcess} workerIds, isolation ${o.isolation}, limit ${o.limit}, visibility ${o.visibilitySeconds} s, max-attempts ${o.maxAttempts}, store ${r.store}`,
    `events         ${total} appended over ${o.produceSeconds} s: ${r.counts.work} ok, ${r.counts.flaky} flaky (fail on attempt 1 or 1-2), ${r.counts.poison} poison (always fail)`,
    `faults         5 % 5xx + 1 % dropped connections on pull/ack, 429 bursts on pull, ${r.spikes} latency spikes (0.2-1.5 s)` +
      (r.pause ? `, pause ${s(r.pause.forMs)} at ${s(r.pause.atMs)}` : ''),
    `kills          ${r.kills.length} SIGKILL (${killsBySlot || 'none'}), ${r.starts} process starts`,
    `effects        ${v.recordedEvents}/${v.expectedEffects} events took effect, lost ${v.lost.length}, unexpected ${v.unexpectedEffects.length}`,
    `duplicates     ${v.duplicates} events (${pct(v.duplicates, v.expectedEffects)} %), ${v.extraEffects} extra runs; not explained by a kill: ${v.unexplainedDuplicates.length}`,
    `dead letters   ${v.deadLettered} events (${v.deadLetterRecords} records): missing poison ${v.missingDeadLetters.length}, wrongly dead-lettered ${v.wrongDeadLetters.length}`,
    `cursor         committed ${v.cursor.committed} ${v.cursor.committed === v.cursor.head ? '==' : '!='} head ${v.cursor.head}, leased ${v.cursor.leased}, pending ${v.cursor.pendingRedelivery}`,
    `processes      ${v.childrenLeft.length === 0 ? 'none left running' : `LEFT RUNNING: ${v.childrenLeft.join(', ')}`}; final SIGTERM drain ${v.badExits.length === 0 ? 'exit 0 for all' : v.badExits.join('; ')}`,
    `emulator log   ${
      Object.entries(r.emulatorLog)
        .map(([msg, n]) => `${n} x "${msg}"`)
        .join(', ') || 'nothing'
    }`,
    `time           ${s(r.durationMs)} total, ${s(r.drainMs)} from the end of the chaos to the head`,
    v.failures.length === 0 ? 'verdict        PASS' : `verdict        FAIL (records kept in ${r.dir})\n${v.failures.map((f) => `  - ${f}`).join('\n')}`,
  ];
  return lines.join('\n');
}
