import { describe, expect, it } from 'vitest';
import type { RunLine, RunOutcome } from '../fixtures/model-handlers/_plan.js';
import { checkInvariant, keyOf, type DeadLetterLine, type ModelOptions, type Observed } from './invariant.js';

/**
 * The model tests' invariant on histories written by hand: a correct one passes, and each way a
 * worker can get failures wrong (the ones the model tests exist for) is reported under its rule.
 */
const OPTIONS: ModelOptions = { maxAttempts: 3, retryBackoffMinMs: 10, retryBackoffMaxMs: 200, batchHandlers: new Set(['bulk']) };
const PID = 100;
const KILLED = 200;

/** Runs of one pair, each starting `gapMs` after the previous ended; attempts as given. */
function runs(eventId: string, handler: string, steps: [RunOutcome, number, number?][], gapMs = 50): RunLine[] {
  let atMs = 1_000_000;
  return steps.map(([outcome, attempt, pid], i) => {
    const startMs = atMs;
    atMs += 5 + gapMs;
    return {
      eventId,
      handler,
      attempt,
      outcome,
      ...(outcome === 'ok' ? {} : { message: `${handler} ${outcome} on run ${i + 1} of ${eventId}` }),
      ...(outcome === 'threw' ? { cause: 'plan' as const } : {}),
      prior: i,
      startMs,
      endMs: startMs + 5,
      pid: pid ?? PID,
      leaseId: 'lease',
    };
  });
}

/** The dead-letter line a correct worker writes after `history`. */
function record(history: RunLine[], reason: 'permanent' | 'max-attempts'): DeadLetterLine {
  const failed = history.filter((r) => r.outcome !== 'ok');
  const first = failed[0] as RunLine;
  const last = failed.at(-1) as RunLine;
  return {
    handler: last.handler,
    reason,
    event: { id: last.eventId },
    error: { message: last.message as string },
    attempt: failed.length,
    firstFailedAt: new Date(first.endMs).toISOString(),
    lastFailedAt: new Date(last.endMs).toISOString(),
  };
}

function observed(pairs: { eventId: string; handler: string; history: RunLine[]; dead?: DeadLetterLine[] }[], extra: Partial<Observed> = {}): Observed {
  const expected = new Map<string, string[]>();
  for (const p of pairs) expected.set(p.eventId, [...(expected.get(p.eventId) ?? []), p.handler]);
  return {
    expected,
    runs: pairs.flatMap((p) => p.history),
    deadLetters: pairs.flatMap((p) => p.dead ?? []),
    cursor: { committed: '10', head: '10' },
    ...extra,
  };
}

const rules = (o: Observed) => [...new Set(checkInvariant(o, OPTIONS).map((v) => v.rule))].sort();

describe('the failure-handling invariant', () => {
  const healed = runs('e1', 'one', [
    ['threw', 1],
    ['retry-later', 2],
    ['ok', 3],
  ]);
  healed[1]!.afterMs = 40;
  const poison = runs('e2', 'one', [
    ['threw', 1],
    ['threw', 2],
    ['threw', 3],
  ]);
  const permanent = runs('e3', 'two', [
    ['threw', 1],
    ['permanent', 2],
  ]);
  const batch = runs('e3', 'bulk', [
    ['threw', 7],
    ['ok', 7],
  ]);
  const correct = () => [
    { eventId: 'e1', handler: 'one', history: healed },
    { eventId: 'e2', handler: 'one', history: poison, dead: [record(poison, 'max-attempts')] },
    { eventId: 'e3', handler: 'two', history: permanent, dead: [record(permanent, 'permanent')] },
    { eventId: 'e3', handler: 'bulk', history: batch },
  ];

  it('holds for a correct history (batch runs are not held to per-event attempts)', () => {
    expect(checkInvariant(observed(correct()), OPTIONS)).toEqual([]);
  });

  it('reports a healthy event dead-lettered after one failed run (attempts counted per delivery)', () => {
    const history = runs('e4', 'one', [['threw', 3]]);
    expect(rules(observed([...correct(), { eventId: 'e4', handler: 'one', history, dead: [{ ...record(history, 'max-attempts') }] }]))).toEqual([
      'attempt-mismatch',
      'dead-letter-without-cause',
    ]);
  });

  it('reports attempts reset or counted twice', () => {
    const reset = runs('e5', 'one', [
      ['threw', 1],
      ['ok', 1],
    ]);
    const twice = runs('e6', 'one', [
      ['threw', 1],
      ['ok', 3],
    ]);
    const found = checkInvariant(
      observed([
        { eventId: 'e5', handler: 'one', history: reset },
        { eventId: 'e6', handler: 'one', history: twice },
      ]),
      OPTIONS,
    );
    expect(found.map((v) => [v.rule, v.key])).toEqual([
      ['attempt-mismatch', keyOf('one', 'e5')],
      ['attempt-mismatch', keyOf('one', 'e6')],
    ]);
  });

  it('reports a poison event never dead-lettered, run once too often, or dead-lettered twice', () => {
    const missing = rules(observed([{ eventId: 'e2', handler: 'one', history: poison }]));
    expect(missing).toEqual(['dead-letter-missing']);
    const fourth = runs('e2', 'one', [
      ['threw', 1],
      ['threw', 2],
      ['threw', 3],
      ['threw', 4],
    ]);
    expect(rules(observed([{ eventId: 'e2', handler: 'one', history: fourth, dead: [record(fourth, 'max-attempts')] }]))).toContain('too-many-failures');
    expect(
      rules(observed([{ eventId: 'e2', handler: 'one', history: poison, dead: [record(poison, 'max-attempts'), record(poison, 'max-attempts')] }])),
    ).toEqual(['dead-letter-repeated']);
  });

  it('reports an effect lost or repeated, and a run after the event ended', () => {
    expect(rules(observed([{ eventId: 'e7', handler: 'one', history: [] }]))).toEqual(['effect-missing']);
    expect(
      rules(
        observed([
          {
            eventId: 'e7',
            handler: 'one',
            history: runs('e7', 'one', [
              ['ok', 1],
              ['ok', 1],
            ]),
          },
        ]),
      ),
    ).toEqual(['effect-repeated', 'run-after-end']);
  });

  it('reports a dead letter with the wrong reason, attempts, times or error', () => {
    const bad = { ...record(poison, 'max-attempts'), reason: 'permanent', attempt: 1, firstFailedAt: new Date(0).toISOString(), error: { message: 'other' } };
    expect(rules(observed([{ eventId: 'e2', handler: 'one', history: poison, dead: [bad] }]))).toEqual([
      'dead-letter-attempts',
      'dead-letter-error',
      'dead-letter-reason',
      'dead-letter-times',
    ]);
  });

  it('reports a retry sooner than the backoff minimum or than a RetryLaterError asked', () => {
    const soon = runs(
      'e8',
      'one',
      [
        ['threw', 1],
        ['ok', 2],
      ],
      2,
    );
    expect(rules(observed([{ eventId: 'e8', handler: 'one', history: soon }]))).toEqual(['retry-too-soon']);
    const asked = runs(
      'e9',
      'one',
      [
        ['retry-later', 1],
        ['ok', 2],
      ],
      50,
    );
    asked[0]!.afterMs = 150;
    expect(rules(observed([{ eventId: 'e9', handler: 'one', history: asked }]))).toEqual(['retry-too-soon']);
    // Capped by the backoff maximum: asking for more than 200 ms waits 200 ms.
    const capped = runs(
      'e9',
      'one',
      [
        ['retry-later', 1],
        ['ok', 2],
      ],
      210,
    );
    capped[0]!.afterMs = 10_000;
    expect(checkInvariant(observed([{ eventId: 'e9', handler: 'one', history: capped }]), OPTIONS)).toEqual([]);
  });

  it('reports a cursor behind the head and runs of a handler that does not match', () => {
    const o = observed(correct(), { cursor: { committed: '9', head: '10' } });
    expect(rules({ ...o, runs: [...o.runs, ...runs('e1', 'two', [['ok', 1]])] })).toEqual(['cursor-behind', 'unexpected-run']);
  });

  describe('after a SIGKILL', () => {
    // The killed process ran the effect; its done mark was lost; another process ran it again.
    const rerun = runs('e10', 'one', [
      ['ok', 1, KILLED],
      ['ok', 1],
    ]);
    // The killed process's failure was never counted: the next run sees the same attempt.
    const lost = runs('e11', 'one', [
      ['threw', 1],
      ['threw', 2, KILLED],
      ['ok', 2],
    ]);
    // The killed process dead-lettered it but its done mark was lost: written again by the next run.
    const rewritten = runs('e12', 'one', [
      ['threw', 1],
      ['threw', 2],
      ['permanent', 3, KILLED],
      ['permanent', 4],
    ]);
    // Its first run dead-lettered it, and neither the done mark nor the failure was kept: the next run
    // is attempt 1 again and writes a record of its own failure only.
    const firstRewritten = runs('e15', 'one', [
      ['permanent', 1, KILLED],
      ['permanent', 1],
    ]);
    const pairs = [
      { eventId: 'e10', handler: 'one', history: rerun },
      { eventId: 'e11', handler: 'one', history: lost },
      { eventId: 'e12', handler: 'one', history: rewritten, dead: [record(rewritten.slice(0, 3), 'permanent'), record(rewritten, 'permanent')] },
      {
        eventId: 'e15',
        handler: 'one',
        history: firstRewritten,
        dead: [record(firstRewritten.slice(0, 1), 'permanent'), record(firstRewritten.slice(1), 'permanent')],
      },
    ];
    const inFlight = new Set(['e10', 'e11', 'e12', 'e15'].map((id) => keyOf('one', id)));

    it('tolerates one run with lost bookkeeping, for pairs in flight at the kill only', () => {
      expect(checkInvariant(observed(pairs, { tolerated: { pid: KILLED, keys: inFlight } }), OPTIONS)).toEqual([]);
      const strict = checkInvariant(observed(pairs, { tolerated: { pid: KILLED, keys: new Set() } }), OPTIONS);
      expect(new Set(strict.map((v) => v.key))).toEqual(inFlight);
    });

    it('still reports a reset after the kill, and a second extra run', () => {
      const reset = runs('e13', 'one', [
        ['threw', 1],
        ['threw', 2, KILLED],
        ['ok', 1],
      ]);
      const twoExtra = runs('e14', 'one', [
        ['ok', 1, KILLED],
        ['ok', 1],
        ['ok', 1],
      ]);
      const keys = new Set([keyOf('one', 'e13'), keyOf('one', 'e14')]);
      const found = checkInvariant(
        observed(
          [
            { eventId: 'e13', handler: 'one', history: reset },
            { eventId: 'e14', handler: 'one', history: twoExtra },
          ],
          { tolerated: { pid: KILLED, keys } },
        ),
        OPTIONS,
      );
      expect(new Set(found.map((v) => `${v.rule} ${v.key}`))).toEqual(
        new Set([`attempt-mismatch ${keyOf('one', 'e13')}`, `effect-repeated ${keyOf('one', 'e14')}`, `run-after-end ${keyOf('one', 'e14')}`]),
      );
    });

    it('still reports a record whose failure times fit neither the set-aside run nor the runs after it', () => {
      const history = runs('e16', 'one', [
        ['permanent', 1, KILLED],
        ['permanent', 1],
      ]);
      const early = { ...record(history.slice(1), 'permanent'), firstFailedAt: new Date((history[0] as RunLine).startMs - 1_000).toISOString() };
      const found = checkInvariant(
        observed([{ eventId: 'e16', handler: 'one', history, dead: [record(history.slice(0, 1), 'permanent'), early] }], {
          tolerated: { pid: KILLED, keys: new Set([keyOf('one', 'e16')]) },
        }),
        OPTIONS,
      );
      expect(found.map((v) => v.rule)).toEqual(['dead-letter-times']);
    });
  });

  it("order per (handler, subject): a run of a later event before an earlier one's last run ended is reported; other subjects and handlers are free", () => {
    // e1 fails, then runs ok 55 ms later; e2 (same subject) runs between them.
    const e1 = runs('e1', 'one', [
      ['threw', 1],
      ['ok', 2],
    ]);
    const e2Early = runs('e2', 'one', [['ok', 1]]).map((r) => ({ ...r, startMs: r.startMs + 20, endMs: r.endMs + 20 }));
    const e2Late = runs('e2', 'one', [['ok', 1]]).map((r) => ({ ...r, startMs: r.startMs + 100, endMs: r.endMs + 100 }));
    const sameSubject = [
      { id: 'e1', subject: 'a' },
      { id: 'e2', subject: 'a' },
    ];
    const order = { ...OPTIONS, order: true };
    const early = checkInvariant(
      observed(
        [
          { eventId: 'e1', handler: 'one', history: e1 },
          { eventId: 'e2', handler: 'one', history: e2Early },
        ],
        { stream: sameSubject },
      ),
      order,
    );
    expect(early.map((v) => [v.rule, v.key])).toEqual([['order', 'one:e2']]);
    expect(
      checkInvariant(
        observed(
          [
            { eventId: 'e1', handler: 'one', history: e1 },
            { eventId: 'e2', handler: 'one', history: e2Late },
          ],
          { stream: sameSubject },
        ),
        order,
      ),
    ).toEqual([]);
    // Another subject, or another handler of the subject, does not wait for e1.
    expect(
      checkInvariant(
        observed(
          [
            { eventId: 'e1', handler: 'one', history: e1 },
            { eventId: 'e2', handler: 'one', history: e2Early },
          ],
          {
            stream: [
              { id: 'e1', subject: 'a' },
              { id: 'e2', subject: 'b' },
            ],
          },
        ),
        order,
      ),
    ).toEqual([]);
    expect(
      checkInvariant(
        observed(
          [
            { eventId: 'e1', handler: 'one', history: e1 },
            { eventId: 'e2', handler: 'two', history: e2Early.map((r) => ({ ...r, handler: 'two' })) },
          ],
          { stream: sameSubject },
        ),
        order,
      ),
    ).toEqual([]);
    // Without the option (replicas, a kill), order is not checked.
    expect(
      checkInvariant(
        observed(
          [
            { eventId: 'e1', handler: 'one', history: e1 },
            { eventId: 'e2', handler: 'one', history: e2Early },
          ],
          { stream: sameSubject },
        ),
        OPTIONS,
      ),
    ).toEqual([]);
  });
});
