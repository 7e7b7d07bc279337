import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { defineHandler, PermanentError } from '../../src/index.js';
import { createFakeClock, createTestEvent, entryUpdatedData, runHandler, sourceEntry, withEmulator } from '../../src/testing/index.js';

const KIT_HANDLERS = fileURLToPath(new URL('./fixtures/kit-handlers', import.meta.url));

describe('createTestEvent', () => {
  it('builds a delivered-looking CloudEvent with unique ids and increasing sequences', () => {
    const a = createTestEvent('source_entry.updated');
    const b = createTestEvent('order.created', { orderId: 'o-1' }, { subject: 'o-1' });
    expect(a).toMatchObject({ specversion: '1.0', type: 'source_entry.updated', subject: 'entry-1', datacontenttype: 'application/json' });
    expect(a.data.current.properties[0]).toEqual({
      id: 'name',
      value: 'Example',
      type: 'Text',
      delimiter: null,
      lastUpdated: expect.any(String),
      language: null,
    });
    expect(a.data.previous).toBeNull();
    expect(b.id).not.toBe(a.id);
    expect(BigInt(b.sequence)).toBeGreaterThan(BigInt(a.sequence));
    expect(b).toMatchObject({ subject: 'o-1', data: { orderId: 'o-1' } });
  });

  it('sourceEntry types values the way ingest infers them', () => {
    const entry = sourceEntry('p-1', { name: 'Kettle', qty: 3, price: 12.5, inStock: true, tags: ['a', 'b'], gone: null });
    expect(entry.properties.map((p) => [p.id, p.type])).toEqual([
      ['name', 'Text'],
      ['qty', 'Integer'],
      ['price', 'Decimal'],
      ['inStock', 'Boolean'],
      ['tags', 'List'],
      ['gone', null],
    ]);
    const event = createTestEvent('source_entry.updated', entryUpdatedData({ sourceId: 's', previous: sourceEntry('p-1', { qty: 2 }), current: entry }));
    expect(event.subject).toBe('p-1');
  });
});

describe('runHandler', () => {
  const flaky = defineHandler({
    type: 'job.*',
    handle(event, ctx) {
      ctx.log.info({ step: 'start' }, 'working');
      if ((event.data as { fail?: string }).fail === 'permanent') throw new PermanentError('never works');
      if ((event.data as { fail?: string }).fail === 'retry') throw new Error('try again');
    },
  });

  it('reports ok with the captured log lines and their bindings', async () => {
    const event = createTestEvent('job.run', {});
    const outcome = await runHandler(flaky, event, { handlerName: 'jobs/run' });
    expect(outcome.status).toBe('ok');
    expect(outcome.logs).toEqual([
      { level: 'info', msg: 'working', fields: expect.objectContaining({ step: 'start', handler: 'jobs/run', eventId: event.id, attempt: 1 }) },
    ]);
  });

  it('a throw is failed (retried) before the last attempt and dead-lettered on it', async () => {
    const event = createTestEvent('job.run', { fail: 'retry' });
    const first = await runHandler(flaky, event, { attempt: 1, maxAttempts: 3 });
    expect(first).toMatchObject({ status: 'failed', error: { message: 'try again' } });
    const last = await runHandler(flaky, event, { attempt: 3, maxAttempts: 3 });
    expect(last).toMatchObject({ status: 'dead_lettered', reason: 'max-attempts' });
  });

  it('PermanentError is dead-lettered at once', async () => {
    const outcome = await runHandler(flaky, createTestEvent('job.run', { fail: 'permanent' }));
    expect(outcome).toMatchObject({ status: 'dead_lettered', reason: 'permanent', error: { message: 'never works', code: 'DW_ERR_PERMANENT' } });
  });

  it('accepts a handler module namespace and refuses events the handler never receives', async () => {
    expect((await runHandler({ default: flaky }, createTestEvent('job.x', {}))).status).toBe('ok');
    expect(() => runHandler(flaky, createTestEvent('other.thing', {}))).toThrow(/never receives an event of type other.thing/);
    expect(() => runHandler({ handle() {} }, createTestEvent('job.x', {}))).toThrow(/not a handler made with defineHandler/);
  });
});

describe('fake clock', () => {
  /** Waits on its signal like a well-behaved handler doing slow I/O. */
  const slow = defineHandler({
    type: 'slow',
    async handle(_event, ctx) {
      await new Promise<void>((resolve, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason as Error), { once: true }));
    },
  });

  it('aborts ctx.signal at the simulated lease deadline, not before', async () => {
    const clock = createFakeClock();
    let settled = false;
    const running = runHandler(slow, createTestEvent('slow', {}), { clock, leaseMs: 30_000 }).finally(() => (settled = true));
    await clock.advance(29_999);
    expect(settled).toBe(false);
    await clock.advance(1);
    const outcome = await running;
    expect(outcome).toMatchObject({ status: 'failed', error: { code: 'DW_ERR_HANDLER_TIMEOUT', message: expect.stringContaining('lease deadline') } });
    expect(clock.pendingTimers).toBe(0);
  });

  it("the handler's own timeoutMs wins when shorter, and ctx.deadlineMs is on the fake time line", async () => {
    const clock = createFakeClock(1_000_000);
    let deadline = 0;
    const quick = defineHandler({
      type: 'slow',
      timeoutMs: 500,
      async handle(event, ctx) {
        deadline = ctx.deadlineMs;
        await slow.handle(event, ctx);
      },
    });
    const running = runHandler(quick, createTestEvent('slow', {}), { clock });
    await clock.advance(500);
    expect(await running).toMatchObject({ status: 'failed', error: { message: expect.stringContaining('timed out after 500 ms') } });
    expect(deadline).toBe(1_000_500);
  });
});

describe('withEmulator', () => {
  it('runs the real worker against an in-process emulator: ingest -> ok, poison -> dead letter', async () => {
    await withEmulator({ handlers: KIT_HANDLERS }, async (env) => {
      expect(env.worker.ready).toBe(true);
      await env.ingest('kit-products', [
        { id: 'p-1', properties: [{ id: 'name', value: 'Kettle' }] },
        { id: 'p-2', properties: [{ id: 'name', value: 'poison' }] },
      ]);
      const settled = await env.waitForSettled(2);
      expect(settled.map((o) => [o.event.subject, o.handler, o.outcome])).toEqual([
        ['p-1', 'entry', 'ok'],
        ['p-2', 'entry', 'dead_lettered'],
      ]);
      expect(env.deadLetters).toHaveLength(1);
      expect(env.deadLetters[0]).toMatchObject({ handler: 'entry', reason: 'permanent', error: { message: 'entry p-2 is poison' } });
      const metrics = await (await fetch(`${env.worker.metricsUrl}/metrics`)).text();
      expect(metrics).toMatch(/durable_worker_events_total\{[^}]*outcome="dead_lettered"[^}]*\} 1/);
    });
  });

  it('says what it saw when a wait times out, and refuses to start without handlers', async () => {
    const env = await withEmulator({ handlers: KIT_HANDLERS, timeoutMs: 200 });
    try {
      await expect(env.waitForSettled(1)).rejects.toThrow(/condition not met within 200 ms \(no outcome yet\)/);
    } finally {
      await env.close();
    }
    await expect(withEmulator({})).rejects.toThrow(/give `handlers`/);
  });
});
