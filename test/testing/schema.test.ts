import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { defineHandler, EventDataError, PermanentError } from '../../src/index.js';
import { createTestEvent, runHandler } from '../../src/testing/index.js';
import { startWorker } from '../../src/worker/start.js';
import { createConsumer, deadLetters, FAST, silent, TENANT, tempDir, workerConfig } from '../worker/harness.js';

const HANDLERS = fileURLToPath(new URL('./fixtures/schema-handlers', import.meta.url));

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

describe.each(['none', 'thread'] as const)('schema validation in the worker (isolation %s)', (isolation) => {
  let emulator: RunningEmulator;
  beforeAll(async () => {
    emulator = await startEmulator({ port: 0 });
  });
  afterAll(async () => {
    await emulator?.close();
  });

  it('valid data runs the handler with parsed values; invalid data is dead-lettered at once', async () => {
    const dir = tempDir('schema');
    const record = join(dir, 'record.txt');
    // The handler writes where this says; threads get the variable as the worker starts them.
    process.env.DW_TEST_RECORD_FILE = record;
    const destination = await createConsumer(emulator);
    const [good, bad] = emulator.appendEvents(TENANT, [
      { type: 'order.created', subject: 'o-1', data: { orderId: 'o-1', total: '9.5' } },
      { type: 'order.created', subject: 'o-2', data: { orderId: 'o-2', total: -1 } },
    ]);
    const worker = await startWorker(workerConfig(emulator, destination, dir, { handlersDir: HANDLERS, isolation, exitWhenIdle: true }), {
      logger: silent,
      timings: FAST,
    });
    expect(await worker.done).toEqual({ reason: 'idle' });
    expect(readFileSync(record, 'utf8')).toBe(`${good?.id} 9.50 EUR\n`);
    const dead = deadLetters(join(dir, 'dead-letter.jsonl'));
    expect(dead.map((d) => [d.event.id, d.reason, d.attempt, d.error.code])).toEqual([[bad?.id, 'permanent', 1, 'DW_ERR_PERMANENT']]);
    expect(dead[0]?.error.message).toMatch(/does not match the data schema of handler order: data\.total: /);
  });
});
