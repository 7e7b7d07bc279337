import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { dispatchOnce, startDispatcher, type DispatchJob } from '../../src/dispatch/index.js';
import { ErrorCodes } from '../../src/errors.js';
import { loadHandlers } from '../../src/handlers/loader.js';

/**
 * startDispatcher does not wait for the thread pool's warm-up (the worker pulls meanwhile,
 * docs/benchmarks.md#cold-start): runs started before the threads are up wait for them, and run in
 * a thread; when a thread cannot load the handlers, those runs end unstarted (never called) and
 * `warmedUp` rejects naming the cause.
 */
const silent = pino({ level: 'silent' });

function job(handler: string, data: unknown): DispatchJob {
  const event = { specversion: '1.0', id: `e-${Math.random()}`, type: 'behave.test', subject: 's-1', sequence: '1', data } as const;
  return { handler, event, ctx: { attempt: 1, deliveryAttempt: 1, generation: 1, workerId: 'w-0', leaseId: 'lease-1', leaseDeadlineMs: Date.now() + 60_000 } };
}

async function start(dir: string) {
  const handlers = await loadHandlers(dir);
  return startDispatcher({ isolation: 'thread', handlers, handlersDir: dir, forward: undefined, logger: silent, logLevel: 'silent', maxInProgress: 4 });
}

describe('the thread pool warming up', () => {
  it('a run started before the threads are up waits for them and runs in a thread', async () => {
    const threadsFile = join(mkdtempSync(join(tmpdir(), 'dw-warm-up-')), 'threads.txt');
    const { dispatcher, warmedUp } = await start(resolve('test/fixtures/handlers-behaviours'));
    try {
      let warm = false;
      void warmedUp.then(() => (warm = true));
      const ending = dispatchOnce(dispatcher, job('behave', { behaviour: 'ok', threadsFile }), new AbortController().signal);
      expect(warm).toBe(false);
      expect(await ending).toMatchObject({ status: 'ok' });
      await warmedUp;
      const [threadId] = readFileSync(threadsFile, 'utf8').trim().split(' ');
      expect(Number(threadId)).toBeGreaterThan(0);
    } finally {
      await dispatcher.close();
    }
  }, 60_000);

  it('a thread that cannot load the handlers: the waiting runs end unstarted, warmedUp rejects with the cause', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dw-warm-up-broken-'));
    const called = join(dir, 'called.txt');
    // Loads in the main thread (the loader's check passes), throws in every worker thread.
    writeFileSync(
      join(dir, 'threads-only-broken.mjs'),
      `import { isMainThread } from 'node:worker_threads';
import { writeFileSync } from 'node:fs';
if (!isMainThread) throw new Error('no database driver in this thread');
export default { [Symbol.for('durable-worker.handler')]: true, type: '*', async handle() { writeFileSync(${JSON.stringify(called)}, 'called'); } };
`,
    );
    const { dispatcher, warmedUp } = await start(dir);
    try {
      const ending = dispatchOnce(dispatcher, job('threads-only-broken', {}), new AbortController().signal);
      await expect(warmedUp).rejects.toMatchObject({ code: ErrorCodes.HANDLER_LOAD, message: expect.stringContaining('no database driver in this thread') });
      expect(await ending).toEqual({ status: 'unstarted' });
      // A run started after the failure ends the same way, at once.
      expect(await dispatchOnce(dispatcher, job('threads-only-broken', {}), new AbortController().signal)).toEqual({ status: 'unstarted' });
      expect(() => readFileSync(called)).toThrow();
    } finally {
      await dispatcher.close();
    }
  }, 60_000);
});
