import { appendFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkRun, type CheckInput } from '../../bench/chaos/check.js';
import type { EventKind } from '../../bench/chaos/plan.js';

/** The chaos checker itself: it must fail a run that lost, duplicated or wrongly dead-lettered events. */
const KILLED_PID = 4_000_001;
const OTHER_PID = 4_000_002;

function fixture(): { dir: string; input: CheckInput; kinds: Map<string, EventKind> } {
  const dir = mkdtempSync(join(tmpdir(), 'dw-chaos-check-'));
  const kinds = new Map<string, EventKind>([
    ['e1', 'work'],
    ['e2', 'flaky'],
    ['p1', 'poison'],
  ]);
  writeFileSync(join(dir, `effects-${OTHER_PID}.log`), 'e1 1 10000\ne2 2 10050\n');
  writeFileSync(join(dir, 'dead-letter-0.jsonl'), `${JSON.stringify({ event: { id: 'p1' } })}\n`);
  const input: CheckInput = {
    dir,
    kinds,
    processes: [
      { slot: 0, pid: KILLED_PID, startedAtMs: 0, killedAtMs: 20_000, exit: { code: null, signal: 'SIGKILL' } },
      { slot: 1, pid: OTHER_PID, startedAtMs: 0, exit: { code: 0, signal: null } },
    ],
    consumer: { id: 'c', paused: false, head: '3', committed: '3', leased: 0, pendingRedelivery: 0, startedAfter: '0', leases: [] },
    inFlightWindowMs: 6_000,
    drained: [true, true],
  };
  return { dir, input, kinds };
}

describe('chaos checker', () => {
  it('passes a clean run', () => {
    expect(checkRun(fixture().input).failures).toEqual([]);
  });

  it('accepts a duplicate whose extra run was in a process killed right after it', () => {
    const { dir, input } = fixture();
    writeFileSync(join(dir, `effects-${KILLED_PID}.log`), 'e1 1 18000\n');
    const verdict = checkRun(input);
    expect(verdict.failures).toEqual([]);
    expect(verdict.duplicates).toBe(1);
  });

  it('fails a duplicate no kill explains, a lost event, a wrong dead letter and a cursor behind', () => {
    const { dir, input, kinds } = fixture();
    appendFileSync(join(dir, `effects-${OTHER_PID}.log`), 'e2 3 30000\n');
    writeFileSync(join(dir, `effects-${KILLED_PID}.log`), 'e1 1 1000\n');
    kinds.set('e3', 'work');
    appendFileSync(join(dir, 'dead-letter-0.jsonl'), `${JSON.stringify({ event: { id: 'e1' } })}\n`);
    input.consumer = { ...input.consumer, committed: '2' };
    const verdict = checkRun(input);
    expect(verdict.lost).toEqual(['e3']);
    expect(verdict.unexplainedDuplicates.sort()).toEqual(['e1', 'e2']);
    expect(verdict.wrongDeadLetters).toEqual(['e1']);
    expect(verdict.failures.some((f) => f.includes('committed 2 != head 3'))).toBe(true);
  });

  it('fails an unexpected effect of a poison event and a process that did not drain', () => {
    const { dir, input } = fixture();
    appendFileSync(join(dir, `effects-${OTHER_PID}.log`), 'p1 1 10100\n');
    input.drained = [true, false];
    const verdict = checkRun(input);
    expect(verdict.unexpectedEffects).toEqual(['p1']);
    expect(verdict.failures.some((f) => f.includes('did not drain'))).toBe(true);
  });
});
