import { randomUUID } from 'node:crypto';
import { HTTP } from 'cloudevents';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Agent } from 'undici';
import { createForwardingHandler } from '../../src/forward/forwarding-handler.js';
import { setHandlerScope } from '../../src/tracing/handler-scope.js';
import type { CloudEvent } from '../../src/types.js';
import { startTestApp, type TestApp } from './app-server.js';
import { contextFor } from './handler-context.js';

const CREATION = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
const PROCESS_SPAN = '00-4bf92f3577b34da6a3ce929d0e0e4736-b7ad6b7169203331-01';
const ctx = () => contextFor();
const eventFor = (overrides: Partial<CloudEvent> = {}): CloudEvent => ({
  specversion: '1.0',
  id: `evt-${randomUUID()}`,
  type: 'source_entry.updated',
  subject: 'entry-1',
  sequence: '7',
  source: '/tenants/t1',
  data: { n: 1 },
  ...overrides,
});

let app: TestApp;
const dispatcher = new Agent({ keepAliveTimeout: 10_000 });
beforeAll(async () => {
  app = await startTestApp('/events');
});
afterAll(async () => {
  await dispatcher.close();
  await app.close();
});
afterEach(() => setHandlerScope(undefined));

async function forward(mode: 'binary' | 'structured', event: CloudEvent) {
  await createForwardingHandler({ url: app.url, mode, dispatcher }).handle(event, ctx());
  return app.received.find((r) => r.eventId === event.id)!;
}

describe('the forwarding handler sends trace context on to the app', () => {
  it('binary mode: the creation context as ce-traceparent/ce-tracestate, and as the request traceparent when no span is active', async () => {
    const event = eventFor({ traceparent: CREATION, tracestate: 'vendor=1' });
    const got = await forward('binary', event);
    expect(got.headers).toMatchObject({ 'ce-traceparent': CREATION, 'ce-tracestate': 'vendor=1', traceparent: CREATION, tracestate: 'vendor=1' });
    // What the official CloudEvents SDK reads from it: the extension attributes.
    const parsed = HTTP.toEvent({ headers: got.headers as Record<string, string>, body: got.body }) as unknown as Record<string, unknown>;
    expect(parsed).toMatchObject({ id: event.id, traceparent: CREATION, tracestate: 'vendor=1' });
  });

  it("structured mode: the creation context in the envelope, the request's own in the traceparent header", async () => {
    // The handler run's scope (the process span, with tracing on) is the context the request is sent in.
    setHandlerScope({ run: (_carrier, fn) => fn(), activeCarrier: () => ({ traceparent: PROCESS_SPAN }) });
    const event = eventFor({ traceparent: CREATION });
    const got = await forward('structured', event);
    expect(got.headers.traceparent).toBe(PROCESS_SPAN);
    expect(JSON.parse(got.body)).toMatchObject({ id: event.id, traceparent: CREATION });
    const parsed = HTTP.toEvent({ headers: got.headers as Record<string, string>, body: got.body }) as unknown as Record<string, unknown>;
    expect(parsed.traceparent).toBe(CREATION);
  });

  it('binary mode with an active span and an untraced event: only the request traceparent', async () => {
    setHandlerScope({ run: (_carrier, fn) => fn(), activeCarrier: () => ({ traceparent: PROCESS_SPAN, tracestate: 'w=2' }) });
    const got = await forward('binary', eventFor());
    expect(got.headers).toMatchObject({ traceparent: PROCESS_SPAN, tracestate: 'w=2' });
    expect(got.headers['ce-traceparent']).toBeUndefined();
  });

  it('an untraced event with tracing off: no trace header at all; an invalid traceparent on an event is not passed on', async () => {
    for (const event of [eventFor(), eventFor({ traceparent: 'garbage' })]) {
      const got = await forward('binary', event);
      expect(Object.keys(got.headers).filter((k) => k.includes('trace'))).toEqual([]);
    }
  });
});
