import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { createInProcessDispatcher } from '../../src/dispatch/in-process.js';
import { createThreadDispatcher } from '../../src/dispatch/thread-pool.js';
import type { Dispatcher, DispatchJob } from '../../src/dispatch/types.js';
import { loadHandlers } from '../../src/handlers/loader.js';
import { defineHandler, EventDataError, PermanentError } from '../../src/index.js';
import { createTestEvent, runHandler } from '../../src/testing/index.js';

const HANDLERS = fileURLToPath(new URL('./fixtures/schema-handlers', import.meta.url));
const silent = pino({ level: 'silent' });

function job(data: unknown): DispatchJob {
  return { handler: 'order', event: createTestEvent('order.created', data), ctx: { attempt: 1, generation: 1, workerId: 'w-0', leaseId: 'l-1', deadlineMs: Date.now() + 10_000 } };
}

describe('defineHandler schema', () => {
  it('hands the parsed data (coercion, defaults) to handle', async () => {
    const seen: unknown[] = [];
    const handler = defineHandler({
      type: 'order.created',
      schema: z.object({ total: z.coerce.number(), currency: z.string().default('EUR') }),
      handle(event) {
        seen.push(event.data);
      },
    });
    const outcome = await runHandler(handler, createTestEvent('order.created', { total: '12.5' }));
    expect(outcome.status).toBe('ok');
    expect(seen).toEqual([{ total: 12.5, currency: 'EUR' }]);
  });

  it('a mismatch dead-letters at once with a message naming the paths, never the values', async () => {
    let ran = false;
    const handler = defineHandler({
      type: 'order.created',
      schema: z.object({ orderId: z.string(), lines: z.array(z.object({ qty: z.number().int() })) }),
      handle() {
        ran = true;
      },
    });
    const event = createTestEvent('order.created', { orderId: 42, lines: [{ qty: 'secret-value' }] });
    const outcome = await runHandler(handler, event, { handlerName: 'orders/created' });
    expect(ran).toBe(false);
    expect(outcome.status).toBe('dead_lettered');
    if (outcome.status !== 'dead_lettered') return;
    expect(outcome.reason).toBe('permanent');
    expect(outcome.error.code).toBe('DW_ERR_PERMANENT');
    expect(outcome.error.message).toContain(`event ${event.id} (order.created) does not match the data schema of handler orders/created`);
    expect(outcome.error.message).toContain('data.orderId:');
    expect(outcome.error.message).toContain('data.lines[0].qty:');
    expect(outcome.error.message).not.toContain('secret-value');
  });

  it('throws EventDataError (a PermanentError) with the issues when handle is called directly', async () => {
    const handler = defineHandler({ type: 'x.y', schema: z.object({ n: z.number() }), handle() {} });
    const ctx = { handlerName: 'direct' } as Parameters<typeof handler.handle>[1];
    const error = await Promise.resolve(handler.handle(createTestEvent('x.y', { n: 'no' }) as never, ctx)).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(EventDataError);
    expect(error).toBeInstanceOf(PermanentError);
    expect((error as EventDataError).issues).toEqual([{ path: 'data.n', message: expect.stringContaining('expected number') }]);
  });

  it('rejects a schema that is not a validator at definition time', () => {
    expect(() => defineHandler({ type: 'x', schema: { parse() {} } as never, handle() {} })).toThrow(/`schema` must be a zod schema/);
  });
});

describe.each(['none', 'thread'] as const)('schema validation in the %s dispatcher', (isolation) => {
  let dispatcher: Dispatcher;
  let record: string;

  beforeAll(async () => {
    record = join(mkdtempSync(join(tmpdir(), 'dw-schema-')), 'record.txt');
    process.env.DW_TEST_RECORD_FILE = record;
    const handlers = await loadHandlers(HANDLERS);
    if (isolation === 'none') dispatcher = createInProcessDispatcher({ handlers, logger: silent });
    else {
      const threads = createThreadDispatcher({ handlers, handlersDir: HANDLERS, forward: undefined, logger: silent, logLevel: 'silent', threads: 1, tasksPerThread: 4 });
      await threads.warmUp();
      dispatcher = threads;
    }
  }, 30_000);

  afterAll(async () => {
    await dispatcher.close();
  });

  it('valid data runs the handler with parsed values; invalid data is permanent', async () => {
    const good = job({ orderId: 'o-1', total: '9.5' });
    expect(await dispatcher.dispatch(good, new AbortController().signal)).toMatchObject({ status: 'ok' });
    expect(readFileSync(record, 'utf8')).toContain(`${good.event.id} 9.50 EUR`);

    const bad = await dispatcher.dispatch(job({ orderId: 'o-2', total: -1 }), new AbortController().signal);
    expect(bad.status).toBe('permanent');
    if (bad.status !== 'permanent') return;
    expect(bad.error.code).toBe('DW_ERR_PERMANENT');
    expect(bad.error.message).toMatch(/does not match the data schema of handler order: data\.total: /);
  });
});
