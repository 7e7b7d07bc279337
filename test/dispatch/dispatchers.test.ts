import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDispatcher } from '../../src/dispatch/index.js';
import type { Dispatcher, DispatchJob } from '../../src/dispatch/types.js';
import { loadHandlers } from '../../src/handlers/loader.js';
import { maxOverlap, spans, startedRuns, type Span } from '../fixtures/spans.js';
import { waitFor } from '../worker/harness.js';

const HANDLERS = fileURLToPath(new URL('../fixtures/handlers-behaviours', import.meta.url));
const logger = pino({ level: 'silent' });
let seq = 0;

function job(handler: string, type: string, data: Record<string, unknown>, overrides: { attempt?: number; deadlineInMs?: number } = {}): DispatchJob {
  seq += 1;
  return {
    handler,
    event: { specversion: '1.0', id: `evt-${seq}`, type, subject: `subject-${seq}`, sequence: String(seq), data },
    ctx: { attempt: overrides.attempt ?? 1, generation: 1, workerId: 'w-0', leaseId: `lease-${seq}`, deadlineMs: Date.now() + (overrides.deadlineInMs ?? 10_000) },
  };
}

const never = new AbortController().signal;

/** The dispatcher's callback form (`dispatchThen`, which the worker uses when offered) behind `dispatch`. */
function throughCallbacks(dispatcher: Dispatcher): Dispatcher {
  const dispatchThen = dispatcher.dispatchThen;
  if (dispatchThen === undefined) throw new Error('this dispatcher offers no dispatchThen');
  return {
    dispatch: (job, signal) => new Promise((resolve) => dispatchThen.call(dispatcher, job, signal, resolve)),
    close: () => dispatcher.close(),
  };
}

for (const [isolation, form] of [['none', 'promise'], ['none', 'callback'], ['thread', 'promise']] as const) {
  describe(`dispatcher (isolation ${isolation}, ${form})`, () => {
    let dispatcher: Dispatcher;
    const dir = mkdtempSync(join(tmpdir(), `dw-dispatch-${isolation}-${form}-`));

    beforeAll(async () => {
      const handlers = await loadHandlers(HANDLERS);
      const created = await createDispatcher({ isolation, handlers, handlersDir: HANDLERS, forward: undefined, logger, logLevel: 'silent', workers: 1, concurrency: 4 });
      dispatcher = form === 'callback' ? throughCallbacks(created) : created;
    });
    afterAll(async () => {
      await dispatcher?.close();
    });

    it('runs a handler: resolve = ok, with ctx fields', async () => {
      const record = join(dir, 'ok.log');
      const j = job('behave', 'behave.ok', { behaviour: 'ok', record }, { attempt: 3 });
      expect(await dispatcher.dispatch(j, never)).toMatchObject({ status: 'ok' });
      expect(readFileSync(record, 'utf8')).toBe(`behave ${j.event.id} ${j.event.subject} ${j.event.sequence} 3\n`);
    });

    it('throw = failed with message and stack; PermanentError (by code) = permanent', async () => {
      const failed = await dispatcher.dispatch(job('behave', 'behave.x', { behaviour: 'fail' }), never);
      expect(failed).toMatchObject({ status: 'failed', error: { message: expect.stringContaining('always fails') } });
      expect(failed.status === 'failed' && failed.error.stack).toContain('behave.ts');
      const permanent = await dispatcher.dispatch(job('behave', 'behave.x', { behaviour: 'permanent' }), never);
      expect(permanent).toMatchObject({ status: 'permanent', error: { code: 'DW_ERR_PERMANENT', message: expect.stringContaining('cannot ever succeed') } });
    });

    it('a handler that hangs fails at its own timeoutMs, then the next runs', async () => {
      const started = Date.now();
      const outcome = await dispatcher.dispatch(job('short-timeout', 'timeout.x', { sleepMs: 60_000 }), never);
      const tookMs = Date.now() - started;
      expect(outcome).toMatchObject({ status: 'failed', error: { code: 'DW_ERR_HANDLER_TIMEOUT', message: expect.stringContaining('timed out after 300 ms') } });
      expect(tookMs).toBeGreaterThanOrEqual(290);
      expect(tookMs).toBeLessThan(3_000);
      expect(await dispatcher.dispatch(job('short-timeout', 'timeout.x', { sleepMs: 5 }), never)).toMatchObject({ status: 'ok' });
    });

    it('a never-settling handler fails at the lease deadline', async () => {
      const outcome = await dispatcher.dispatch(job('behave', 'behave.x', { behaviour: 'hang' }, { deadlineInMs: 400 }), never);
      expect(outcome).toMatchObject({ status: 'failed', error: { code: 'DW_ERR_HANDLER_TIMEOUT', message: expect.stringContaining('lease deadline') } });
    });

    it('an abort ends the run as failed promptly', async () => {
      const controller = new AbortController();
      const pending = dispatcher.dispatch(job('behave', 'behave.x', { behaviour: 'sleep', sleepMs: 60_000 }), controller.signal);
      setTimeout(() => controller.abort(), 100);
      const started = Date.now();
      expect(await pending).toMatchObject({ status: 'failed', error: { code: 'DW_ERR_ABORTED' } });
      expect(Date.now() - started).toBeLessThan(2_000);
    });

    it('runs many handlers concurrently', async () => {
      const started = Date.now();
      const outcomes = await Promise.all(Array.from({ length: 8 }, () => dispatcher.dispatch(job('behave', 'behave.x', { behaviour: 'sleep', sleepMs: 300 }), never)));
      expect(outcomes.every((o) => o.status === 'ok')).toBe(true);
      // Eight 300 ms handlers in well under 8 * 300 ms: they overlapped.
      expect(Date.now() - started).toBeLessThan(1_500);
    });

    if (isolation === 'thread') {
      it('a handler that exits its thread fails; piscina replaces the thread and work goes on', async () => {
        const outcome = await dispatcher.dispatch(job('behave', 'behave.x', { behaviour: 'exit' }), never);
        expect(outcome).toMatchObject({ status: 'failed', error: { code: 'DW_ERR_HANDLER_CRASH', message: expect.stringContaining('exited with code') } });
        const record = join(dir, 'after-exit.log');
        expect(await dispatcher.dispatch(job('behave', 'behave.ok', { behaviour: 'ok', record }), never)).toMatchObject({ status: 'ok' });
        expect(readFileSync(record, 'utf8')).toContain('behave ');
      });

      it('jobs of one turn travel together; a thread that dies later fails only the jobs it had not reported', async () => {
        // Dispatched in one turn: A and C share a chunk (one thread), B goes to the other thread.
        const [a, b, c] = await Promise.all([
          dispatcher.dispatch(job('behave', 'behave.ok', { behaviour: 'ok' }), never),
          dispatcher.dispatch(job('behave', 'behave.ok', { behaviour: 'ok' }), never),
          dispatcher.dispatch(job('behave', 'behave.x', { behaviour: 'exit-after-sleep', sleepMs: 300 }), never),
        ]);
        expect(a).toMatchObject({ status: 'ok' });
        expect(b).toMatchObject({ status: 'ok' });
        expect(c).toMatchObject({ status: 'failed', error: { code: 'DW_ERR_HANDLER_CRASH' } });
      });

      describe('lanes (a batch whose --concurrency the threads keep)', () => {
        let nextLane = 1000;
        const lane = (limit: number, stop: AbortSignal = never) => ({ id: nextLane++, limit, stop });

        it('runs at most `limit` events at once, spread over the threads', async () => {
          const record = join(dir, 'lane-limit.log');
          // The first two runs wait for each other: one per thread, they overlap however busy the machine.
          const startedFile = join(dir, 'lane-limit-started.log');
          const l = lane(2);
          const outcomes = await Promise.all(
            Array.from({ length: 8 }, (_, i) => dispatcher.dispatch(job('behave', 'behave.x', { behaviour: 'sleep-timed', sleepMs: 100, record, startedFile, meet: 2 }), never, l, i)),
          );
          expect(outcomes.map((o) => o.status)).toEqual(Array.from({ length: 8 }, () => 'ok'));
          const runs = spans(record);
          expect(runs.length).toBe(8);
          expect(maxOverlap(runs)).toBe(2);
          // Each run's duration is its own, not the time it waited for a slot (the last waited 300 ms);
          // the first two also spent the rendezvous, so only the six that waited in the lane are judged.
          const durations = outcomes.slice(2).map((o) => (o.status === 'ok' ? o.durationMs : undefined) as number);
          expect(Math.min(...durations)).toBeGreaterThanOrEqual(95);
          expect(Math.max(...durations)).toBeLessThan(300);
        });

        it('the runs of one event start together, as one slot', async () => {
          const record = join(dir, 'lane-unit.log');
          const l = lane(1);
          const jobs = [0, 0, 1].map(() => job('behave', 'behave.x', { behaviour: 'sleep-timed', sleepMs: 100, record }));
          const outcomes = await Promise.all(jobs.map((j, i) => dispatcher.dispatch(j, never, l, i < 2 ? 0 : 1)));
          expect(outcomes.map((o) => o.status)).toEqual(['ok', 'ok', 'ok']);
          const runs = spans(record);
          const [a, b, c] = jobs.map((j) => runs.find((r) => r.eventId === j.event.id) as Span);
          // Unit 0's two runs side by side, then unit 1 alone.
          expect(maxOverlap([a as Span, b as Span])).toBe(2);
          expect((c as Span).startMs).toBeGreaterThanOrEqual(Math.max((a as Span).endMs, (b as Span).endMs) - 1);
        });

        it('a drain (stop) drops the runs still waiting as unstarted; the running ones finish', async () => {
          const stop = new AbortController();
          const l = lane(2, stop.signal);
          const startedFile = join(dir, 'drain-started.log');
          const results = Array.from({ length: 6 }, (_, i) => dispatcher.dispatch(job('behave', 'behave.x', { behaviour: 'sleep', sleepMs: 1_000, startedFile }), never, l, i));
          await waitFor('the first two runs to start', () => startedRuns(startedFile) === 2);
          stop.abort();
          expect((await Promise.all(results)).map((o) => o.status)).toEqual(['ok', 'ok', 'unstarted', 'unstarted', 'unstarted', 'unstarted']);
        });

        it('a deadline abort ends the running runs as failed and the waiting ones as unstarted', async () => {
          const batch = new AbortController();
          const l = lane(2);
          const startedFile = join(dir, 'deadline-started.log');
          const results = Array.from({ length: 5 }, (_, i) => dispatcher.dispatch(job('behave', 'behave.x', { behaviour: 'sleep', sleepMs: 5_000, startedFile }), batch.signal, l, i));
          await waitFor('the first two runs to start', () => startedRuns(startedFile) === 2);
          batch.abort(Object.assign(new Error('batch deadline'), { code: 'DW_ERR_HANDLER_TIMEOUT' }));
          const outcomes = await Promise.all(results);
          expect(outcomes.slice(0, 2)).toMatchObject([
            { status: 'failed', error: { code: 'DW_ERR_HANDLER_TIMEOUT' } },
            { status: 'failed', error: { code: 'DW_ERR_HANDLER_TIMEOUT' } },
          ]);
          expect(outcomes.slice(2)).toEqual([{ status: 'unstarted' }, { status: 'unstarted' }, { status: 'unstarted' }]);
        });

        it('a run that waited, then blocks its thread past its own timeout, is found at that timeout, not at the batch deadline', async () => {
          const handlers = await loadHandlers(HANDLERS);
          const timed = await createDispatcher({ isolation, handlers, handlersDir: HANDLERS, forward: undefined, logger, logLevel: 'silent', workers: 1, concurrency: 1, defaultTimeoutMs: 300 });
          try {
            const l = lane(1);
            const started = Date.now();
            const [first, blocking] = await Promise.all([
              timed.dispatch(job('behave', 'behave.x', { behaviour: 'sleep', sleepMs: 100 }, { deadlineInMs: 60_000 }), never, l, 0),
              timed.dispatch(job('behave', 'behave.x', { behaviour: 'block', sleepMs: 60_000 }, { deadlineInMs: 60_000 }), never, l, 1),
            ]);
            expect(first).toMatchObject({ status: 'ok' });
            expect(blocking).toMatchObject({ status: 'failed', error: { code: 'DW_ERR_HANDLER_TIMEOUT' } });
            // 100 ms wait + 300 ms timeout + 1 s grace; the batch deadline is a minute away.
            expect(Date.now() - started).toBeLessThan(10_000);
          } finally {
            await timed.close();
          }
        });

        it('when its thread dies, the run that was going fails and the runs still waiting are unstarted', async () => {
          const l = lane(1);
          const results = await Promise.all([
            dispatcher.dispatch(job('behave', 'behave.x', { behaviour: 'exit-after-sleep', sleepMs: 100 }), never, l, 0),
            dispatcher.dispatch(job('behave', 'behave.ok', { behaviour: 'ok' }), never, l, 1),
          ]);
          expect(results[0]).toMatchObject({ status: 'failed', error: { code: 'DW_ERR_HANDLER_CRASH' } });
          expect(results[1]).toEqual({ status: 'unstarted' });
        });
      });

      it('a handler that blocks its thread past the deadline fails and the thread is replaced', async () => {
        const started = Date.now();
        const outcome = await dispatcher.dispatch(job('behave', 'behave.x', { behaviour: 'block', sleepMs: 60_000 }, { deadlineInMs: 300 }), never);
        expect(outcome).toMatchObject({ status: 'failed', error: { code: 'DW_ERR_HANDLER_TIMEOUT' } });
        expect(Date.now() - started).toBeLessThan(3_000);
        // Other threads and the replacement keep serving.
        const outcomes = await Promise.all(Array.from({ length: 4 }, () => dispatcher.dispatch(job('behave', 'behave.x', { behaviour: 'ok' }), never)));
        expect(outcomes.map((o) => o.status)).toEqual(['ok', 'ok', 'ok', 'ok']);
      });
    }
  });
}
