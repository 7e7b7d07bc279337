/**
 * One event's record, alone: the bounds that keep it small whatever its handlers do, and how log
 * lines are found (cheaply, as the worker writes them) and read (when a page opens the event).
 */
import { describe, expect, it } from 'vitest';
import { EventRecord, RECORD_LIMITS } from '../../src/console/event-record.js';
import { MAX_LINE_CHARS, peekEventLogLine } from '../../src/console/log-lines.js';
import { createTestEvent } from '../../src/testing/index.js';

const line = (fields: Record<string, unknown>) => JSON.stringify({ level: 30, time: 1_000, pid: 1, hostname: 'h', ...fields });

function record(data: unknown = { n: 1 }): EventRecord {
  const r = new EventRecord({ ...createTestEvent('console.test', data), sequence: '7' }, 1_000);
  r.addDelivery({ workerId: 'w-0', leaseId: 'l-1', generation: 1, attempt: 1, pulledAt: 1_000 });
  return r;
}

describe('log lines', () => {
  it("finds the event and handler of a line without parsing it; any other line is not the console's", () => {
    expect(peekEventLogLine(line({ handler: 'shop', eventId: 'e-1', msg: 'hi' }))).toMatchObject({ eventId: 'e-1', handler: 'shop' });
    expect(peekEventLogLine(line({ eventId: 'e-1', msg: 'the worker about a run' }))).toMatchObject({ eventId: 'e-1', handler: undefined });
    expect(peekEventLogLine(line({ msg: 'worker started' }))).toBeUndefined();
    // An escaped id is read by the parser.
    expect(peekEventLogLine(line({ eventId: 'e-"2"', handler: 'shop' }))).toMatchObject({ eventId: 'e-"2"', handler: 'shop' });
  });

  it('keeps what the page would show of a very long line, not the line', () => {
    const long = line({ handler: 'shop', eventId: 'e-1', attempt: 1, msg: 'big', blob: 'x'.repeat(MAX_LINE_CHARS) });
    const kept = peekEventLogLine(long)!;
    expect(kept.text.length).toBeLessThan(4_000);
    const r = record();
    r.addLog({ ...kept, eventId: r.event.id });
    const [shown] = r.detail().logs;
    expect(shown).toMatchObject({ msg: 'big', handler: 'shop', attempt: 1, level: 'info' });
    expect(shown!.fields!.endsWith('…')).toBe(true);
  });
});

describe('an event record', () => {
  it('sends at most 64 KB of data to the page, saying how big it was', () => {
    const r = record({ blob: 'y'.repeat(100_000) });
    const detail = r.detail();
    expect(detail.data.length).toBe(RECORD_LIMITS.dataChars);
    expect(detail.dataTruncated).toEqual({ bytes: 100_000 + '{"blob":""}'.length });
    expect(record({ small: true }).detail()).not.toHaveProperty('dataTruncated');
  });

  it('keeps the last log lines, deliveries and runs of an event that never stops going round', () => {
    const r = record();
    for (let i = 0; i < RECORD_LIMITS.logs + 5; i++) r.addLog(peekEventLogLine(line({ handler: 'shop', eventId: r.event.id, attempt: 1, msg: `line ${i}` }))!);
    for (let i = 2; i < RECORD_LIMITS.deliveries + 5; i++) r.addDelivery({ workerId: 'w-0', leaseId: 'l-1', generation: i, attempt: i, pulledAt: 1_000 + i });
    for (let i = 0; i < RECORD_LIMITS.runs + 5; i++)
      r.addRun({ handler: 'shop', outcome: 'failed', attempt: i, durationMs: 1, at: 1_000 + i, error: { message: 'no' } });
    const detail = r.detail();
    expect(detail.logs).toHaveLength(RECORD_LIMITS.logs);
    expect(detail.logs[0]!.msg).toBe('line 5');
    expect(detail.logsDropped).toBe(5);
    expect(detail.deliveryHistory).toHaveLength(RECORD_LIMITS.deliveries);
    expect(detail.runs).toHaveLength(RECORD_LIMITS.runs);
    expect(detail.handlers).toEqual([{ handler: 'shop', outcome: 'failed', attempt: RECORD_LIMITS.runs + 4, durationMs: 1, logs: RECORD_LIMITS.logs }]);
  });

  it('shows a run with the stack the worker logged for it, and lines in time order', () => {
    const r = record();
    r.addRun({ handler: 'shop', outcome: 'failed', attempt: 1, durationMs: 3, at: 2_000, error: { message: 'boom' } });
    // The worker's line about the failure arrives before the thread's line written earlier.
    r.addLog(
      peekEventLogLine(
        line({
          time: 1_500,
          eventId: r.event.id,
          handler: 'shop',
          attempt: 1,
          err: { message: 'boom', stack: 'Error: boom\n    at handle' },
          msg: 'handler shop failed: boom',
        }),
      )!,
    );
    r.addLog(peekEventLogLine(line({ time: 1_400, handler: 'shop', eventId: r.event.id, attempt: 1, msg: 'started' }))!);
    const detail = r.detail();
    expect(detail.runs[0]!.error).toEqual({ message: 'boom', stack: 'Error: boom\n    at handle' });
    expect(detail.logs.map((l) => l.msg)).toEqual(['started', 'handler shop failed: boom']);
    // The error is shown with its run, not again among the line's fields.
    expect(detail.logs[1]!.fields).toBeUndefined();
  });
});
