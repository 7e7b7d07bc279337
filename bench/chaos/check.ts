import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ConsumerStateSummary } from '../../src/emulator/index.js';
import type { EventKind } from './plan.js';
import { isGone, type ProcessRecord } from './workers.js';

export interface Effect {
  eventId: string;
  pid: number;
  attempt: number;
  atMs: number;
}

export interface ChaosVerdict {
  expectedEffects: number;
  recordedEvents: number;
  lost: string[];
  /** Events whose effect is recorded more than once. */
  duplicates: number;
  /** Extra effect records (sum over duplicated events of count - 1). */
  extraEffects: number;
  /** Duplicates NOT explained by a SIGKILL (an extra record outside a killed process's last lease window). */
  unexplainedDuplicates: string[];
  /** Effects of events that should never have one (poison). */
  unexpectedEffects: string[];
  deadLettered: number;
  deadLetterRecords: number;
  missingDeadLetters: string[];
  wrongDeadLetters: string[];
  cursor: { committed: string | null; head: string | null; leased: number; pendingRedelivery: number };
  childrenLeft: number[];
  badExits: string[];
  failures: string[];
}

/** Effect lines `<event id> <attempt> <epoch ms>` from every `effects-<pid>.log` of the run. */
export function readEffects(dir: string): Effect[] {
  const out: Effect[] = [];
  for (const name of readdirSync(dir)) {
    const match = /^effects-(\d+)\.log$/.exec(name);
    if (!match) continue;
    const pid = Number(match[1]);
    for (const line of readFileSync(join(dir, name), 'utf8').split('\n')) {
      if (line === '') continue;
      const [eventId = '', attempt = '0', atMs = '0'] = line.split(' ');
      out.push({ eventId, pid, attempt: Number(attempt), atMs: Number(atMs) });
    }
  }
  return out;
}

/** Event ids (with repeats) of every dead-letter file of the run. */
export function readDeadLetters(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    if (!/^dead-letter-\d+\.jsonl$/.test(name)) continue;
    const file = join(dir, name);
    if (!existsSync(file)) continue;
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      if (line !== '') out.push((JSON.parse(line) as { event: { id: string } }).event.id);
    }
  }
  return out;
}

export interface CheckInput {
  dir: string;
  kinds: ReadonlyMap<string, EventKind>;
  processes: readonly ProcessRecord[];
  consumer: ConsumerStateSummary;
  /** How long before a SIGKILL an effect counts as "in flight at the kill": the lease plus slack. */
  inFlightWindowMs: number;
  /** Exit of each process stopped by the final SIGTERM (false = had to be SIGKILLed). */
  drained: boolean[];
}

/**
 * The promises of the run, checked from the records alone: nothing lost, duplicates only where a
 * process was killed with the effect done but not yet marked done (or acked), dead letters exactly
 * the poison events, cursor at head, and no process left behind.
 */
export function checkRun(input: CheckInput): ChaosVerdict {
  const effects = readEffects(input.dir);
  const byEvent = new Map<string, Effect[]>();
  for (const effect of effects) {
    const list = byEvent.get(effect.eventId);
    if (list === undefined) byEvent.set(effect.eventId, [effect]);
    else list.push(effect);
  }
  const killedAt = new Map<number, number>();
  for (const p of input.processes) if (p.killedAtMs !== undefined) killedAt.set(p.pid, p.killedAtMs);
  const atKill = (e: Effect): boolean => {
    const killMs = killedAt.get(e.pid);
    return killMs !== undefined && e.atMs <= killMs && e.atMs >= killMs - input.inFlightWindowMs;
  };

  const lost: string[] = [];
  const unexpectedEffects: string[] = [];
  const expectedPoison = new Set<string>();
  let expectedEffects = 0;
  for (const [id, kind] of input.kinds) {
    if (kind === 'poison') {
      expectedPoison.add(id);
      if (byEvent.has(id)) unexpectedEffects.push(id);
    } else {
      expectedEffects++;
      if (!byEvent.has(id)) lost.push(id);
    }
  }
  for (const id of byEvent.keys()) if (!input.kinds.has(id)) unexpectedEffects.push(id);

  let duplicates = 0;
  let extraEffects = 0;
  const unexplainedDuplicates: string[] = [];
  for (const [id, list] of byEvent) {
    if (list.length < 2) continue;
    duplicates++;
    extraEffects += list.length - 1;
    // Every record but one must come from a process killed shortly after writing it.
    if (list.filter(atKill).length < list.length - 1) unexplainedDuplicates.push(id);
  }

  const deadLetterIds = readDeadLetters(input.dir);
  const dead = new Set(deadLetterIds);
  const missingDeadLetters = [...expectedPoison].filter((id) => !dead.has(id));
  const wrongDeadLetters = [...dead].filter((id) => !expectedPoison.has(id));

  const c = input.consumer;
  const childrenLeft = input.processes.filter((p) => p.exit === undefined || !isGone(p.pid)).map((p) => p.pid);
  const badExits = input.processes
    .filter((p) => p.killedAtMs === undefined && p.exit !== undefined && p.exit.code !== 0)
    .map((p) => `slot ${p.slot} pid ${p.pid}: exit ${p.exit?.code ?? p.exit?.signal}`);
  input.drained.forEach((ok, slot) => ok || badExits.push(`slot ${slot}: did not drain on SIGTERM (SIGKILLed)`));

  const failures: string[] = [];
  if (lost.length > 0) failures.push(`${lost.length} events lost (no effect), e.g. ${lost.slice(0, 3).join(', ')}`);
  if (unexpectedEffects.length > 0) failures.push(`${unexpectedEffects.length} unexpected effects, e.g. ${unexpectedEffects.slice(0, 3).join(', ')}`);
  if (unexplainedDuplicates.length > 0)
    failures.push(`${unexplainedDuplicates.length} duplicates not explained by a kill, e.g. ${unexplainedDuplicates.slice(0, 3).join(', ')}`);
  if (missingDeadLetters.length > 0) failures.push(`${missingDeadLetters.length} poison events not dead-lettered`);
  if (wrongDeadLetters.length > 0)
    failures.push(`${wrongDeadLetters.length} events dead-lettered that should have succeeded, e.g. ${wrongDeadLetters.slice(0, 3).join(', ')}`);
  if (c.committed !== c.head) failures.push(`committed ${c.committed} != head ${c.head}`);
  if (c.leased !== 0 || c.pendingRedelivery !== 0) failures.push(`${c.leased} leased and ${c.pendingRedelivery} pending events at the end`);
  if (childrenLeft.length > 0) failures.push(`processes left running: ${childrenLeft.join(', ')}`);
  failures.push(...badExits);

  return {
    expectedEffects,
    recordedEvents: [...byEvent.keys()].filter((id) => input.kinds.get(id) !== 'poison').length,
    lost,
    duplicates,
    extraEffects,
    unexplainedDuplicates,
    unexpectedEffects,
    deadLettered: dead.size,
    deadLetterRecords: deadLetterIds.length,
    missingDeadLetters,
    wrongDeadLetters,
    cursor: { committed: c.committed, head: c.head, leased: c.leased, pendingRedelivery: c.pendingRedelivery },
    childrenLeft,
    badExits,
    failures,
  };
}
