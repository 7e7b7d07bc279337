import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDispatcher, dispatchOnce, type Dispatcher, type DispatchJob, type DispatchResult } from '../../src/dispatch/index.js';
import { ErrorCodes } from '../../src/errors.js';
import { loadHandlers } from '../../src/handlers/loader.js';
import type { CloudEvent } from '../../src/types.js';

/**
 * The dispatcher on its own, in both isolations: real handler files (test/fixtures/) loaded by the
 * real loader, runs handed to `createDispatcher`'s dispatcher, their ends read from DispatchResult.
 * No worker, no lease: what a handler does becomes one result, and nothing else.
 */
const BEHAVIOURS = resolve('test/fixtures/handlers-behaviours');
const BATCHES = resolve('test/fixtures/batch-handlers');
const silent = pino({ level: 'silent' });

let sequence = 0;
function event(type: string, data: unknown): CloudEvent {
  sequence += 1;
  return { specversion: '1.0', id: `e-${sequence}`, type, subject: `s-${sequence}`, sequence: String(sequence), data };
}

function job(handler: string, ev: CloudEvent): DispatchJob {
  return {
    handler,
    event: ev,
    ctx: { attempt: 1, deliveryAttempt: 1, generation: 1, workerId: 'w-0', leaseId: 'lease-1', leaseDeadlineMs: Date.now() + 60_000 },
  };
}

async function dispatcherFor(isolation: 'thread' | 'none', dir: string): Promise<Dispatcher> {
  const handlers = await loadHandlers(dir);
  return createDispatcher({ isolation, handlers, handlersDir: dir, forward: undefined, logger: silent, logLevel: 'silent', maxInProgress: 4 });
}

const behave = (data: Record<string, unknown>) => job('behave', event('behave.test', data));
const run = (dispatcher: Dispatcher, j: DispatchJob, signal = new AbortController().signal) => dispatchOnce(dispatcher, j, signal);

describe.each(['none', 'thread'] as const)('dispatch, isolation %s', (isolation) => {
  let dispatcher: Dispatcher;
  beforeAll(async () => {
    dispatcher = await dispatcherFor(isolation, BEHAVIOURS);
  }, 60_000);
  afterAll(async () => {
    await dispatcher?.close();
  });

  it('a handler that resolves: ok', async () => {
    expect(await run(dispatcher, behave({ behaviour: 'ok' }))).toMatchObject({ status: 'ok' });
  });

  it('a handler that throws: failed, with its message', async () => {
    const ev = event('behave.test', { behaviour: 'fail' });
    expect(await run(dispatcher, job('behave', ev))).toMatchObject({ status: 'failed', error: { message: `always fails (${ev.id})` } });
  });

  it('PermanentError: permanent, its code kept across the boundary', async () => {
    expect(await run(dispatcher, behave({ behaviour: 'permanent' }))).toMatchObject({ status: 'permanent', error: { code: ErrorCodes.PERMANENT } });
  });

  it("RetryLaterError: failed, its retryAfterMs in the result's error", async () => {
    expect(await run(dispatcher, behave({ behaviour: 'retry-later', afterMs: 1_234 }))).toMatchObject({ status: 'failed', error: { retryAfterMs: 1_234 } });
  });

  it("the handler's timeoutMs: a run past it fails with the timeout code", async () => {
    const result = await run(dispatcher, job('short-timeout', event('timeout.slow', { sleepMs: 60_000 })));
    expect(result).toMatchObject({ status: 'failed', error: { code: ErrorCodes.HANDLER_TIMEOUT } });
  });

  it('the lease signal aborting ends a running handler as failed (aborted)', async () => {
    const lease = new AbortController();
    const started = join(mkdtempSync(join(tmpdir(), 'dw-dispatch-')), 'started');
    const ending = run(dispatcher, behave({ behaviour: 'sleep', sleepMs: 60_000, startedFile: started }), lease.signal);
    await until(() => readable(started));
    lease.abort(Object.assign(new Error('forced shutdown'), { code: ErrorCodes.ABORTED }));
    expect(await ending).toMatchObject({ status: 'failed', error: { code: ErrorCodes.ABORTED } });
  });

  it('a signal aborted before the start: unstarted, the handler never called', async () => {
    const lease = new AbortController();
    lease.abort(Object.assign(new Error('forced shutdown'), { code: ErrorCodes.ABORTED }));
    const runsFile = join(mkdtempSync(join(tmpdir(), 'dw-dispatch-')), 'runs');
    const result = await run(dispatcher, behave({ behaviour: 'ok', runsFile }), lease.signal);
    expect(readable(runsFile)).toBe(false);
    expect(result.status).toBe('unstarted');
  });
});

describe('dispatch, isolation thread: a crashing thread', () => {
  let dispatcher: Dispatcher;
  beforeAll(async () => {
    dispatcher = await dispatcherFor('thread', BEHAVIOURS);
  }, 60_000);
  afterAll(async () => {
    await dispatcher?.close();
  });

  it('process.exit in a handler ends only that run, failed with the crash code; the pool goes on', async () => {
    const lease = new AbortController();
    const runs = dispatcher.open(lease.signal);
    const ends: Promise<DispatchResult>[] = [];
    const start = (j: DispatchJob) => ends.push(new Promise<DispatchResult>((end) => runs.start({ job: j, end })));
    // A neighbour running on the other thread while one thread dies.
    start(behave({ behaviour: 'sleep', sleepMs: 300 }));
    start(behave({ behaviour: 'exit' }));
    const [neighbour, crashed] = await Promise.all(ends);
    runs.close();
    expect(crashed).toMatchObject({ status: 'failed', error: { code: ErrorCodes.HANDLER_CRASH } });
    expect(neighbour).toMatchObject({ status: 'ok' });
    // And after the crash, runs still go.
    const after = await Promise.all([1, 2, 3].map(() => run(dispatcher, behave({ behaviour: 'ok' }))));
    expect(after.map((r) => r.status)).toEqual(['ok', 'ok', 'ok']);
  }, 60_000);
});

describe('dispatch, isolation thread: many runs and chained runs', () => {
  let dispatcher: Dispatcher;
  beforeAll(async () => {
    dispatcher = await dispatcherFor('thread', BEHAVIOURS);
  }, 60_000);
  afterAll(async () => {
    await dispatcher?.close();
  });

  it('runs started together each end with their own outcome', async () => {
    const runs = dispatcher.open(new AbortController().signal);
    const behaviours = ['ok', 'fail', 'permanent', 'retry-later', 'ok', 'fail', 'ok', 'permanent'];
    const jobs = behaviours.map((behaviour) => behave({ behaviour, afterMs: 77 }));
    const results = await Promise.all(jobs.map((j) => new Promise<DispatchResult>((end) => runs.start({ job: j, end }))));
    runs.close();
    expect(results.map((r) => r.status)).toEqual(['ok', 'failed', 'permanent', 'failed', 'ok', 'failed', 'ok', 'permanent']);
    expect(results[1]).toMatchObject({ error: { message: `always fails (${jobs[1]!.event.id})` } });
    expect(results[3]).toMatchObject({ error: { retryAfterMs: 77 } });
    expect(results[5]).toMatchObject({ error: { message: `always fails (${jobs[5]!.event.id})` } });
  }, 60_000);

  it('startAfter: a follower starts once its leader ended ok, and ends unstarted (never called) when the leader failed', async () => {
    const runs = dispatcher.open(new AbortController().signal);
    expect(runs.startAfter).toBeDefined();
    const dir = mkdtempSync(join(tmpdir(), 'dw-dispatch-'));
    const order: string[] = [];
    const startRun = (name: string, j: DispatchJob, after?: { job: DispatchJob; end: (r: DispatchResult) => void }) => {
      let dispatchRun!: { job: DispatchJob; end: (r: DispatchResult) => void };
      const ended = new Promise<DispatchResult>((resolveEnd) => {
        dispatchRun = { job: j, end: (r) => (order.push(name), resolveEnd(r)) };
      });
      if (after === undefined) runs.start(dispatchRun);
      else runs.startAfter?.(dispatchRun, after);
      return { run: dispatchRun, ended };
    };
    const leader = startRun('leader', behave({ behaviour: 'sleep', sleepMs: 100 }));
    const follower = startRun('follower', behave({ behaviour: 'ok', runsFile: join(dir, 'follower-runs') }), leader.run);
    const failing = startRun('failing', behave({ behaviour: 'fail' }));
    const orphan = startRun('orphan', behave({ behaviour: 'ok', runsFile: join(dir, 'orphan-runs') }), failing.run);
    const [l, f, x, o] = await Promise.all([leader.ended, follower.ended, failing.ended, orphan.ended]);
    runs.close();
    expect([l.status, f.status, x.status, o.status]).toEqual(['ok', 'ok', 'failed', 'unstarted']);
    expect(order.indexOf('follower')).toBeGreaterThan(order.indexOf('leader'));
    expect(readable(join(dir, 'follower-runs'))).toBe(true);
    expect(readable(join(dir, 'orphan-runs'))).toBe(false);
  }, 60_000);
});

describe.each(['none', 'thread'] as const)('dispatch of a batch handler, isolation %s', (isolation) => {
  let dispatcher: Dispatcher;
  const calls = join(mkdtempSync(join(tmpdir(), 'dw-dispatch-')), 'calls.jsonl');
  beforeAll(async () => {
    // The fixture writes one line per handleBatch call; threads copy process.env when they start.
    process.env.BATCH_CALLS = calls;
    dispatcher = await dispatcherFor(isolation, BATCHES);
  }, 60_000);
  afterAll(async () => {
    await dispatcher?.close();
  });

  it('runs started in one turn become one handleBatch call; each event gets its own result', async () => {
    const entry = (entryId: string, name: string) =>
      job('bulk', event('source_entry.updated', { entryId, current: { properties: [{ id: 'name', value: name }] } }));
    const jobs = [entry('a', 'fine'), entry('b', 'poison'), entry('c', 'always-fail'), entry('d', 'fine')];
    const runs = dispatcher.open(new AbortController().signal);
    const results = await Promise.all(jobs.map((j) => new Promise<DispatchResult>((end) => runs.start({ job: j, end }))));
    runs.close();
    expect(results.map((r) => r.status)).toEqual(['ok', 'permanent', 'failed', 'ok']);
    expect(results[2]).toMatchObject({ error: { message: expect.stringContaining('failed on attempt 1') } });
    const lines = readFileSync(calls, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { ids: string[] });
    expect(lines).toEqual([{ attempt: 1, ids: ['a', 'b', 'c', 'd'] }]);
  }, 60_000);
});

function readable(path: string): boolean {
  try {
    readFileSync(path);
    return true;
  } catch {
    return false;
  }
}

async function until(condition: () => boolean, deadlineMs = 30_000): Promise<void> {
  const end = Date.now() + deadlineMs;
  while (!condition()) {
    if (Date.now() > end) throw new Error('condition not met before the deadline');
    await new Promise((r) => setTimeout(r, 10));
  }
}
