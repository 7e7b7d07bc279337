import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSourcesTestbed, type SourcesTestbed } from './sources-helpers.js';

const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
const entries = (...ids: string[]) => ({ entries: ids.map((id) => ({ id, properties: [{ id: 'title', value: `t-${id}` }] })) });

/** The emulator's choice (the spec shows no tracing): an ingest's trace context travels on its events. */
describe('typed ingest with W3C trace context', () => {
  let t: SourcesTestbed;
  beforeAll(async () => {
    t = await startSourcesTestbed();
  });
  afterAll(() => t.close());

  it('puts traceparent and tracestate on every event the ingest emits, and nothing on those of an ingest without them', async () => {
    const consumer = await t.newConsumer();
    const traced = t.newSourceId();
    const untraced = t.newSourceId();
    expect((await t.ingest(traced, entries('a', 'b'), { ...t.auth, traceparent: TRACEPARENT, tracestate: 'vendor=1' })).status).toBe(202);
    expect((await t.ingest(untraced, entries('c'))).status).toBe(202);
    await t.em.idle();
    const events = await t.drain(consumer);
    expect(events.map((e) => [e.subject, e.traceparent, e.tracestate])).toEqual([
      ['a', TRACEPARENT, 'vendor=1'],
      ['b', TRACEPARENT, 'vendor=1'],
      ['c', undefined, undefined],
    ]);
  });

  it('ignores an invalid traceparent (and a tracestate without one) instead of refusing the ingest', async () => {
    const consumer = await t.newConsumer();
    const source = t.newSourceId();
    expect((await t.ingest(source, entries('x'), { ...t.auth, traceparent: 'not-a-trace', tracestate: 'vendor=1' })).status).toBe(202);
    await t.em.idle();
    const [event] = await t.drain(consumer);
    expect(event).toBeDefined();
    expect('traceparent' in event! || 'tracestate' in event!).toBe(false);
  });

  it('describes both request headers in the OpenAPI document (docs/openapi, generated from the route declarations)', () => {
    const document = JSON.parse(readFileSync(new URL('../../docs/openapi/ingest.json', import.meta.url), 'utf8')) as {
      paths: Record<string, Record<string, { parameters?: { name: string; in: string }[] }>>;
    };
    const headers = document.paths['/sources/{sourceId}']!.post!.parameters!.filter((p) => p.in === 'header').map((p) => p.name);
    expect(headers).toEqual(['traceparent', 'tracestate']);
  });
});
