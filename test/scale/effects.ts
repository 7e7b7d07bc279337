import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RunningEmulator } from '../../src/emulator/index.js';
import { REPO_ROOT } from '../cli/cli-process.js';
import { TENANT } from '../worker/harness.js';

/** Handlers folder whose one handler appends `<event id> <pid>` to $DW_TEST_EFFECTS_FILE. */
export const EFFECTS_HANDLERS = join(REPO_ROOT, 'test/fixtures/effects-append');

export interface Effect {
  eventId: string;
  pid: number;
}

/** The effects recorded so far, in file order (a torn last line of a killed writer is ignored). */
export function readEffects(file: string): Effect[] {
  if (!existsSync(file)) return [];
  const out: Effect[] = [];
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const [eventId, pid] = line.split(' ');
    if (eventId && pid && /^\d+$/.test(pid)) out.push({ eventId, pid: Number(pid) });
  }
  return out;
}

export interface EffectsSummary {
  /** Event ids with no effect at all. */
  missing: string[];
  /** Event ids whose effect ran more than once, with every pid that ran it. */
  duplicated: Map<string, number[]>;
  /** Effects beyond the first, over all events. */
  extraEffects: number;
}

export function summarize(effects: readonly Effect[], expectedIds: readonly string[]): EffectsSummary {
  const byId = new Map<string, number[]>();
  for (const effect of effects) {
    const pids = byId.get(effect.eventId);
    if (pids === undefined) byId.set(effect.eventId, [effect.pid]);
    else pids.push(effect.pid);
  }
  const duplicated = new Map([...byId].filter(([, pids]) => pids.length > 1));
  let extraEffects = 0;
  for (const pids of duplicated.values()) extraEffects += pids.length - 1;
  return { missing: expectedIds.filter((id) => !byId.has(id)), duplicated, extraEffects };
}

/** Appends `count` events (subjects spread over 50 chains): their ids in order, and each one's stream sequence. */
export function appendEffectEvents(
  emulator: RunningEmulator,
  count: number,
  data: (i: number) => Record<string, unknown> = () => ({}),
): { ids: string[]; sequenceOf: Map<string, bigint> } {
  const ids: string[] = [];
  const sequenceOf = new Map<string, bigint>();
  for (let start = 0; start < count; start += 1_000) {
    const chunk = Array.from({ length: Math.min(1_000, count - start) }, (_, j) => ({
      type: 'effects.test',
      subject: `s-${(start + j) % 50}`,
      data: data(start + j),
    }));
    for (const event of emulator.appendEvents(TENANT, chunk)) {
      ids.push(event.id);
      sequenceOf.set(event.id, BigInt(event.sequence));
    }
  }
  return { ids, sequenceOf };
}

/**
 * Common `durable-worker run` arguments against the in-process emulator with the dev client; each of
 * `options` (kebab-case name -> value) adds its flag, and `handlers` replaces the effects folder.
 */
export function runArgs(emulator: RunningEmulator, destination: string, dir: string, options: Record<string, string | number>): string[] {
  const args = [
    'run',
    '--base-url',
    emulator.url,
    '--tenant',
    TENANT,
    '--client-id',
    'dev-client',
    '--client-secret',
    'dev-secret',
    '--destination',
    destination,
    '--handlers',
    String(options.handlers ?? EFFECTS_HANDLERS),
    '--dead-letter',
    `file:${join(dir, 'dead-letter.jsonl')}`,
    '--metrics-port',
    '0',
    '--metrics-host',
    '127.0.0.1',
  ];
  if (!('log-level' in options)) args.push('--log-level', 'warn');
  for (const [name, value] of Object.entries(options)) if (name !== 'handlers') args.push(`--${name}`, String(value));
  return args;
}
