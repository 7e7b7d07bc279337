import { createServer } from 'node:net';
import { getEventListeners } from 'node:events';
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Agent } from 'undici';
import { createForwardingHandler, classifyForwardStatus, parseForwardUrl, FORWARD_ERROR_CODE } from '../../src/forward/forwarding-handler.js';
import { encodeHeaderValue } from '../../src/forward/cloudevents-http.js';
import { ErrorCodes, hasCode, isPermanentError } from '../../src/errors.js';
import type { CloudEvent } from '../../src/types.js';
import { startTestApp, type TestApp } from './app-server.js';
import { contextFor } from './handler-context.js';

function eventFor(overrides: Partial<CloudEvent> = {}): CloudEvent {
  return {
    specversion: '1.0',
    id: `evt-${randomUUID()}`,
    type: 'source_entry.updated',
    subject: 'entry-1',
    sequence: '42',
    time: '2025-01-02T03:04:05.000Z',
    source: '/tenants/t1/sources/s1',
    data: { sourceId: 's1', entryId: 'entry-1', previous: null, current: { id: 'entry-1', properties: [], lastUpdated: '2025-01-02T03:04:05.000Z' } },
    ...overrides,
  };
}

let app: TestApp;
const dispatcher = new Agent({ keepAliveTimeout: 10_000 });

beforeAll(async () => {
  app = await startTestApp('/events');
});
afterAll(async () => {
  await dispatcher.close();
  await app.close();
});
afterEach(() => {
  app.behaviours.clear();
  app.defaultBehaviour = 200;
});

async function outcomeOf(run: Promise<unknown>): Promise<'ok' | 'dead-letter' | 'retry'> {
  try {
    await run;
    return 'ok';
  } catch (err) {
    return isPermanentError(err) ? 'dead-letter' : 'retry';
  }
}

describe('status mapping against a real app', () => {
  const cases: Array<[number, 'ok' | 'dead-letter' | 'retry']> = [
    [200, 'ok'],
    [201, 'ok'],
    [202, 'ok'],
    [204, 'ok'],
    [400, 'dead-letter'],
    [404, 'dead-letter'],
    [409, 'dead-letter'],
    [422, 'dead-letter'],
    [408, 'retry'],
    [429, 'retry'],
    [500, 'retry'],
    [502, 'retry'],
    [503, 'retry'],
    [301, 'retry'],
  ];
  it.each(cases)('status %i -> %s', async (status, expected) => {
    const handler = createForwardingHandler({ url: app.url, dispatcher });
    const event = eventFor();
    app.behaviours.set(event.id, status);
    expect(await outcomeOf(Promise.resolve(handler.handle(event, contextFor())))).toBe(expected);
    expect(app.received.some((r) => r.eventId === event.id)).toBe(true);
  });

  it('a retryable answer carries a stable code and the status, not the query string', async () => {
    const handler = createForwardingHandler({ url: `${app.url}?token=should-not-leak`, dispatcher });
    const event = eventFor();
    app.behaviours.set(event.id, 503);
    const err = await Promise.resolve(handler.handle(event, contextFor())).catch((e: unknown) => e);
    expect((err as Error).message).toBe(`forward to ${app.url} answered 503`);
    expect((err as Error).message).not.toContain('should-not-leak');
  });

  it('5xx error has code DW_ERR_FORWARD and status', async () => {
    const handler = createForwardingHandler({ url: app.url, dispatcher });
    const event = eventFor();
    app.behaviours.set(event.id, 503);
    const err = await Promise.resolve(handler.handle(event, contextFor())).catch((e: unknown) => e);
    expect(hasCode(err, FORWARD_ERROR_CODE)).toBe(true);
    expect((err as { status: number }).status).toBe(503);
    expect((err as Error).message).toBe(`forward to ${app.url} answered 503`);
  });

  it('a 4xx dead-letters with PermanentError naming the status and event', async () => {
    const handler = createForwardingHandler({ url: app.url, dispatcher });
    const event = eventFor();
    app.behaviours.set(event.id, 422);
    const err = await Promise.resolve(handler.handle(event, contextFor())).catch((e: unknown) => e);
    expect(hasCode(err, ErrorCodes.PERMANENT)).toBe(true);
    expect((err as Error).message).toContain('422');
    expect((err as Error).message).toContain(event.id);
  });

  it('an app that hangs past the lease deadline -> retried timeout (the app had the request; the hang outlives the test)', async () => {
    const handler = createForwardingHandler({ url: app.url, dispatcher });
    const event = eventFor();
    app.behaviours.set(event.id, 'hang');
    const err = await Promise.resolve(handler.handle(event, contextFor(300))).catch((e: unknown) => e);
    expect(hasCode(err, ErrorCodes.HANDLER_TIMEOUT)).toBe(true);
    expect(isPermanentError(err)).toBe(false);
    expect(app.received.map((r) => r.eventId)).toContain(event.id);
  });

  it('ctx.signal aborting (forced shutdown) stops the request -> retried', async () => {
    const handler = createForwardingHandler({ url: app.url, dispatcher });
    const event = eventFor();
    app.behaviours.set(event.id, 'hang');
    const controller = new AbortController();
    const before = app.received.length;
    const run = Promise.resolve(handler.handle(event, contextFor(30_000, controller))).catch((e: unknown) => e);
    await app.waitForRequests(before + 1);
    controller.abort(new Error('shutdown'));
    const err = await run;
    expect(hasCode(err, ErrorCodes.ABORTED)).toBe(true);
  });

  it('leaves no listener on a long-lived ctx.signal after requests settle', async () => {
    const handler = createForwardingHandler({ url: app.url, dispatcher });
    const controller = new AbortController();
    const failing = eventFor();
    app.behaviours.set(failing.id, 500);
    await handler.handle(eventFor(), contextFor(5_000, controller));
    await Promise.resolve(handler.handle(failing, contextFor(5_000, controller))).catch(() => undefined);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });

  it('connection refused -> retried network error', async () => {
    const port = await freePort();
    const handler = createForwardingHandler({ url: `http://127.0.0.1:${port}/events`, dispatcher });
    const err = await Promise.resolve(handler.handle(eventFor(), contextFor())).catch((e: unknown) => e);
    expect(hasCode(err, ErrorCodes.NETWORK)).toBe(true);
    expect((err as Error).message).toContain('ECONNREFUSED');
    expect(isPermanentError(err)).toBe(false);
  });
});

describe('wire shape', () => {
  it('binary mode: exact ce-* headers, content type and JSON body', async () => {
    const handler = createForwardingHandler({ url: app.url, dispatcher });
    const event = eventFor();
    await handler.handle(event, contextFor());
    const got = app.received.find((r) => r.eventId === event.id);
    expect(got).toBeDefined();
    expect(got!.method).toBe('POST');
    expect(got!.path).toBe('/events');
    const ceHeaders = Object.fromEntries(Object.entries(got!.headers).filter(([k]) => k.startsWith('ce-')));
    expect(ceHeaders).toEqual({
      'ce-specversion': '1.0',
      'ce-id': event.id,
      'ce-type': 'source_entry.updated',
      'ce-source': '/tenants/t1/sources/s1',
      'ce-subject': 'entry-1',
      'ce-time': '2025-01-02T03:04:05.000Z',
      'ce-sequence': '42',
    });
    expect(got!.headers['content-type']).toBe('application/json');
    expect(got!.body).toBe(JSON.stringify(event.data));
    expect(JSON.parse(got!.body)).toEqual(event.data);
  });

  it('binary mode: header values are percent-encoded; absent source and time are handled', async () => {
    const handler = createForwardingHandler({ url: app.url, dispatcher });
    const event = eventFor({ subject: 'entrée 1 "x" 100%', source: undefined, time: undefined, data: undefined });
    await handler.handle(event, contextFor());
    const got = app.received.find((r) => r.eventId === event.id)!;
    expect(got.headers['ce-subject']).toBe('entr%C3%A9e%201%20%22x%22%20100%25');
    expect(decodeURIComponent(got.headers['ce-subject'] as string)).toBe(event.subject);
    expect(got.headers['ce-source']).toBe('durable-worker');
    expect(got.headers['ce-time']).toBeUndefined();
    expect(got.body).toBe('null');
  });

  it('structured mode: one application/cloudevents+json document, no ce-* headers', async () => {
    const handler = createForwardingHandler({ url: app.url, mode: 'structured', dispatcher });
    const event = eventFor();
    await handler.handle(event, contextFor());
    const got = app.received.find((r) => r.eventId === event.id)!;
    expect(got.headers['content-type']).toBe('application/cloudevents+json');
    expect(Object.keys(got.headers).filter((k) => k.startsWith('ce-'))).toEqual([]);
    expect(JSON.parse(got.body)).toEqual({
      specversion: '1.0',
      id: event.id,
      type: event.type,
      source: event.source,
      subject: event.subject,
      sequence: '42',
      time: event.time,
      datacontenttype: 'application/json',
      data: event.data,
    });
  });

  it('sends no credential: no authorization, cookie or api-key header, only the event', async () => {
    const handler = createForwardingHandler({ url: app.url, dispatcher });
    const event = eventFor();
    await handler.handle(event, contextFor());
    const got = app.received.find((r) => r.eventId === event.id)!;
    const allowed = new Set([
      'host',
      'connection',
      'content-type',
      'content-length',
      'user-agent',
      'accept',
      'accept-encoding',
      'accept-language',
      'sec-fetch-mode',
    ]);
    const extra = Object.keys(got.headers).filter((k) => !k.startsWith('ce-') && !allowed.has(k));
    expect(extra).toEqual([]);
    expect(got.headers.authorization).toBeUndefined();
    expect(got.headers['x-api-key']).toBeUndefined();
  });

  it('the default dispatcher keeps connections alive: 6 events, at most 2 connections', async () => {
    const handler = createForwardingHandler({ url: app.url });
    const events = Array.from({ length: 6 }, () => eventFor());
    for (const event of events) await handler.handle(event, contextFor());
    const got = events.map((e) => app.received.find((r) => r.eventId === e.id)!);
    expect(got.every((r) => r.headers.connection === 'keep-alive')).toBe(true);
    // undici may open a second socket while the first is finishing a response; never one per event.
    expect(new Set(got.map((r) => r.remotePort)).size).toBeLessThanOrEqual(2);
  });
});

describe('configuration errors', () => {
  it('rejects bad URLs with messages naming --forward-url', () => {
    expect(() => parseForwardUrl('not a url')).toThrow(/--forward-url must be an absolute http\(s\) URL/);
    expect(() => parseForwardUrl('ftp://127.0.0.1/x')).toThrow(/--forward-url must use http or https \(got ftp\)/);
    expect(() => parseForwardUrl('http://user:pw@127.0.0.1/x')).toThrow(/must not contain credentials/);
    expect(() => createForwardingHandler({ url: app.url, mode: 'weird' as 'binary' })).toThrow(/binary or structured/);
  });

  it('is a valid "*" handler', () => {
    const handler = createForwardingHandler({ url: app.url });
    expect(handler.type).toBe('*');
  });

  it('classifies every status class', () => {
    expect(classifyForwardStatus(299)).toBe('ok');
    expect(classifyForwardStatus(499)).toBe('dead-letter');
    expect(classifyForwardStatus(599)).toBe('retry');
  });

  it('encodes header values per the CloudEvents HTTP binding', () => {
    expect(encodeHeaderValue('a-b_c.d~e!')).toBe('a-b_c.d~e!');
    expect(encodeHeaderValue('€')).toBe('%E2%82%AC');
    expect(encodeHeaderValue('\n')).toBe('%0A');
  });
});

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
