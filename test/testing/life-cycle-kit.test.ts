import { describe, expect, it } from 'vitest';
import { defineHandler } from '../../src/index.js';
import { createTestEvent, runHandler } from '../../src/testing/index.js';

describe('runHandler and the life cycle', () => {
  it("runs setup before the event and teardown after it, whatever the outcome; ctx.resources is setup's result", async () => {
    const calls: string[] = [];
    const handler = defineHandler({
      type: 'job.*',
      setup(ctx) {
        calls.push(`setup ${ctx.handlerName}`);
        ctx.log.info('pool opened');
        return { pool: 'p1' };
      },
      handle(event, ctx) {
        calls.push(`handle ${ctx.resources.pool}`);
        if (event.type === 'job.fail') throw new Error('boom');
      },
      teardown(ctx) {
        calls.push(`teardown ${ctx.resources.pool}`);
      },
    });
    const ok = await runHandler(handler, createTestEvent('job.ok', {}), { handlerName: 'jobs' });
    expect(ok.status).toBe('ok');
    expect(ok.logs).toEqual([{ level: 'info', msg: 'pool opened', fields: { handler: 'jobs', phase: 'setup' } }]);
    const failed = await runHandler(handler, createTestEvent('job.fail', {}), { handlerName: 'jobs' });
    expect(failed.status).toBe('failed');
    expect(calls).toEqual(['setup jobs', 'handle p1', 'teardown p1', 'setup jobs', 'handle p1', 'teardown p1']);
  });

  it('a teardown that throws rejects naming the handler', async () => {
    const handler = defineHandler({ type: 'job.x', handle() {}, teardown: () => Promise.reject(new Error('close failed')) });
    await expect(runHandler(handler, createTestEvent('job.x', {}), { handlerName: 'jobs' })).rejects.toThrow('teardown of handler jobs failed: close failed');
  });
});
