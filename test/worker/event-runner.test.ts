import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import type { DispatchResult, Dispatcher } from '../../src/dispatch/types.js';
import { ErrorCodes } from '../../src/errors.js';
import { MemoryIdempotencyStore } from '../../src/idempotency/memory.js';
import type { ClaimState, IdempotencyStore } from '../../src/idempotency/store.js';
import type { CloudEvent } from '../../src/types.js';
import { DoneMarkWriter } from '../../src/worker/done-marks.js';
import { FirstFailures, runEventHandler, type EventRunnerContext, type LeaseScope } from '../../src/worker/event-runner.js';
import type { EventOutcome, WorkerEmitter } from '../../src/worker/events.js';
import { silent } from './harness.js';

const event: CloudEvent = { specversion: '1.0', id: 'e-1', type: 'thing.happened', subject: 's-1', sequence: '1', data: {} };

/** A runner whose store answers the busy key's polls with `answers` in turn, and whose dispatcher records its runs. */
function setUp(answers: (ClaimState | Error)[], { callbacks = false } = {}) {
  const memory = new MemoryIdempotencyStore({ doneTtlMs: 60_000 });
  const store: IdempotencyStore = {
    markDone: (keys) => memory.markDone(keys),
    release: (keys, owner) => memory.release(keys, owner),
    close: () => memory.close(),
    async claim(keys) {
      const answer = answers.shift() ?? 'busy';
      if (answer instanceof Error) throw answer;
      return keys.map(() => answer);
    },
  };
  const dispatched: string[] = [];
  const dispatcher: Dispatcher = {
    async dispatch(job): Promise<DispatchResult> {
      dispatched.push(`promise:${job.event.id}`);
      return { status: 'ok' };
    },
    // As the in-process dispatcher does: the outcome at once, through the callback.
    ...(callbacks
      ? {
          dispatchThen(job, _signal, onEnd) {
            dispatched.push(`callback:${job.event.id}`);
            onEnd({ status: 'ok' });
          },
        }
      : {}),
    async close() {},
  };
  const events = new EventEmitter() as WorkerEmitter;
  const done: { outcome: string; code?: string | undefined }[] = [];
  events.on('event:done', (e) => done.push({ outcome: e.outcome, code: e.error?.code }));
  const ctx: EventRunnerContext = {
    workerId: 'w-0',
    store,
    dispatcher,
    deadLetter: { write: async () => {}, close: async () => {} },
    events,
    logger: silent,
    maxAttempts: 3,
    firstFailures: new FirstFailures(),
  };
  const now = Date.now();
  const pendingWrites: Promise<unknown>[] = [];
  const lease: LeaseScope = {
    leaseId: 'l-1',
    generation: 1,
    attempt: 1,
    owner: 'w-0:l-1:1',
    deadlineMs: now + 10_000,
    expiresAtMs: now + 12_000,
    signal: new AbortController().signal,
    pendingWrites,
    doneMarks: new DoneMarkWriter(store, silent, pendingWrites),
    jobContext: { attempt: 1, generation: 1, workerId: 'w-0', leaseId: 'l-1', deadlineMs: now + 10_000 },
    lane: undefined,
  };
  // The callbacks as a promise: an outcome resolves it, a thrown listener rejects it.
  const run = (claimed: ClaimState) => new Promise<EventOutcome | 'unstarted'>((resolve, reject) => runEventHandler(ctx, lease, event, 0, 'h', 'h:e-1', claimed, resolve, reject));
  return { run, dispatched, done, events, pendingWrites };
}

describe('runEventHandler by claim state', () => {
  it('new: runs the handler', async () => {
    const t = setUp([]);
    expect(await t.run('new')).toBe('ok');
    expect(t.dispatched).toEqual(['promise:e-1']);
    expect(t.done).toEqual([{ outcome: 'ok', code: undefined }]);
  });

  it('done: skipped as a duplicate without running', async () => {
    const t = setUp([]);
    expect(await t.run('done')).toBe('duplicate');
    expect(t.dispatched).toEqual([]);
    expect(t.done).toEqual([{ outcome: 'duplicate', code: undefined }]);
  });

  it('busy, then done by the other owner: a duplicate', async () => {
    const t = setUp(['busy', 'done']);
    expect(await t.run('busy')).toBe('duplicate');
    expect(t.dispatched).toEqual([]);
  });

  it('busy, then released by the other owner: runs it', async () => {
    const t = setUp(['new']);
    expect(await t.run('busy')).toBe('ok');
    expect(t.dispatched).toEqual(['promise:e-1']);
  });

  it('busy, and the store fails while waiting: failed (retried with the batch), not run', async () => {
    const t = setUp([new Error('store down')]);
    expect(await t.run('busy')).toBe('failed');
    expect(t.dispatched).toEqual([]);
    expect(t.done).toEqual([{ outcome: 'failed', code: ErrorCodes.STORE }]);
  });
});

describe('runEventHandler through a dispatcher that reports by callback (dispatchThen)', () => {
  it('runs the handler through the callback, not a promise, and records the outcome once', async () => {
    const t = setUp([], { callbacks: true });
    expect(await t.run('new')).toBe('ok');
    expect(t.dispatched).toEqual(['callback:e-1']);
    expect(t.done).toEqual([{ outcome: 'ok', code: undefined }]);
  });

  it('busy, then released by the other owner: runs it through the callback', async () => {
    const t = setUp(['new'], { callbacks: true });
    expect(await t.run('busy')).toBe('ok');
    expect(t.dispatched).toEqual(['callback:e-1']);
  });

  for (const callbacks of [false, true]) {
    it(`an event:done listener that throws rejects the run instead of losing it (${callbacks ? 'callback' : 'promise'} dispatcher)`, async () => {
      const t = setUp([], { callbacks });
      t.events.on('event:done', () => {
        throw new Error('listener broke');
      });
      await expect(t.run('new')).rejects.toThrow('listener broke');
      await expect(t.run('done')).rejects.toThrow('listener broke');
    });
  }
});
