import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDispatcher } from '../../src/dispatch/index.js';
import type { Dispatcher, DispatchJob } from '../../src/dispatch/types.js';
import { loadHandlers } from '../../src/handlers/loader.js';

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

for (const isolation of ['none', 'thread'] as const) {
  describe(`dispatcher (isolation ${isolation})`, () => {
    let dispatcher: Dispatcher;
    const dir = mkdtempSync(join(tmpdir(), `dw-dispatch-${isolation}-`));

    beforeAll(async () => {
      const handlers = await loadHandlers(HANDLERS);
      dispatcher = await createDispatcher({ isolation, handlers, handlersDir: HANDLERS, forward: undefined, logger, logLevel: 'silent', workers: 1, concurrency: 4 });
    });
    afterAll(async () => {
      await dispatcher?.close();
    });

    it('runs a handler: resolve = ok, with ctx fields', async () => {
      const record = join(dir, 'ok.log');
      const j = job('behave', 'behave.ok', { behaviour: 'ok', record }, { attempt: 3 });
      expect(await dispatcher.dispatch(j, never)).toEqual({ status: 'ok' });
      expect(readFileSync(record, 'utf8')).toBe(`behave ${j.event.id} ${j.event.subject} ${j.event.sequence} 3\n`);
    });

    it('throw = failed with message and stack; PermanentError (by code) = permanent', async () => {
      const failed = await dispatcher.dispatch(job('behave', 'behave.x', { behaviour: 'fail' }), never);
      expect(failed).toMatchObject({ status: 'failed', error: { message: expect.stringContaining('always fails') } });
      expect(failed.status !== 'ok' && failed.error.stack).toContain('behave.ts');
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
      expect(await dispatcher.dispatch(job('short-timeout', 'timeout.x', { sleepMs: 5 }), never)).toEqual({ status: 'ok' });
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
        expect(await dispatcher.dispatch(job('behave', 'behave.ok', { behaviour: 'ok', record }), never)).toEqual({ status: 'ok' });
        expect(readFileSync(record, 'utf8')).toContain('behave ');
      });

      it('jobs of one turn travel together; a thread that dies later fails only the jobs it had not reported', async () => {
        // Dispatched in one turn: A and C share a chunk (one thread), B goes to the other thread.
        const [a, b, c] = await Promise.all([
          dispatcher.dispatch(job('behave', 'behave.ok', { behaviour: 'ok' }), never),
          dispatcher.dispatch(job('behave', 'behave.ok', { behaviour: 'ok' }), never),
          dispatcher.dispatch(job('behave', 'behave.x', { behaviour: 'exit-after-sleep', sleepMs: 300 }), never),
        ]);
        expect(a).toEqual({ status: 'ok' });
        expect(b).toEqual({ status: 'ok' });
        expect(c).toMatchObject({ status: 'failed', error: { code: 'DW_ERR_HANDLER_CRASH' } });
      });

      it('a handler that blocks its thread past the deadline fails and the thread is replaced', async () => {
        const started = Date.now();
        const outcome = await dispatcher.dispatch(job('behave', 'behave.x', { behaviour: 'block', sleepMs: 60_000 }, { deadlineInMs: 300 }), never);
        expect(outcome).toMatchObject({ status: 'failed', error: { code: 'DW_ERR_HANDLER_TIMEOUT' } });
        expect(Date.now() - started).toBeLessThan(3_000);
        // Other threads and the replacement keep serving.
        const outcomes = await Promise.all(Array.from({ length: 4 }, () => dispatcher.dispatch(job('behave', 'behave.x', { behaviour: 'ok' }), never)));
        expect(outcomes).toEqual(Array.from({ length: 4 }, () => ({ status: 'ok' })));
      });
    }
  });
}
