/**
 * Done-when of issue 24 (traces), end to end over real HTTP: an ingest carrying a W3C traceparent,
 * the emulator stamping it on its events, the worker with --otel pulling them in either isolation
 * mode, and a real OTLP/HTTP receiver decoding what the real exporter sends (protobuf, then JSON).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import pino, { type Logger } from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { WorkerConfig } from '../../src/config/types.js';
import { startWorker } from '../../src/worker/start.js';
import type { RunningWorker } from '../../src/worker/running-worker.js';
import { startSourcesTestbed, type SourcesTestbed } from '../emulator/sources-helpers.js';
import { waitFor } from '../fixtures/wait-for.js';
import { startTestApp, type TestApp } from '../forward/app-server.js';
import { tracingTestConfig } from './worker-config.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from './otlp-receiver.js';

const newTraceId = () => randomUUID().replaceAll('-', '');
const newSpanId = () => randomUUID().replaceAll('-', '').slice(0, 16);

/** An OTLP receiver, an emulator and a worker with --otel exporting to the receiver. */
interface TracedWorker {
  receiver: OtlpReceiver;
  testbed: SourcesTestbed;
  worker: RunningWorker;
  close(): Promise<void>;
}

async function startTracedWorker(
  isolation: 'none' | 'thread',
  overrides: (dir: string) => Partial<WorkerConfig>,
  options: { protocol?: string; logger?: Logger } = {},
): Promise<TracedWorker> {
  const receiver = await startOtlpReceiver();
  vi.stubEnv('OTEL_EXPORTER_OTLP_ENDPOINT', receiver.url);
  if (options.protocol !== undefined) vi.stubEnv('OTEL_EXPORTER_OTLP_PROTOCOL', options.protocol);
  vi.stubEnv('OTEL_BSP_SCHEDULE_DELAY', '200');
  const testbed = await startSourcesTestbed();
  const dir = mkdtempSync(join(tmpdir(), 'dw-traces-'));
  const worker = await startWorker(tracingTestConfig(testbed.url, dir, isolation, overrides(dir)), {
    healthServer: false,
    ...(options.logger === undefined ? {} : { logger: options.logger }),
  });
  return {
    receiver,
    testbed,
    worker,
    async close() {
      await worker.close();
      await testbed.close();
      await receiver.close();
      vi.unstubAllEnvs();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

describe.each([
  ['none', 'http/json'],
  ['thread', 'http/protobuf'],
] as const)('one trace from an ingest to the handler (--isolation %s, OTLP %s)', (isolation, protocol) => {
  const traceId = newTraceId();
  const ingestSpanId = newSpanId();
  const entryIds = [`ok-${randomUUID()}`, `ok-${randomUUID()}`, `fail-${randomUUID()}`];
  const logLines: Record<string, unknown>[] = [];
  let bed: TracedWorker | undefined;
  let receiver: OtlpReceiver;
  let testbed: SourcesTestbed;
  let spans: ReceivedSpan[];

  const processSpans = () => spans.filter((s) => s.name === 'process dev-consumer' && s.traceId === traceId);

  beforeAll(async () => {
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) logLines.push(JSON.parse(line) as Record<string, unknown>);
        done();
      },
    });
    bed = await startTracedWorker(isolation, () => ({}), { protocol, logger: pino({ level: 'info' }, sink) });
    ({ receiver, testbed } = bed);
    const ingest = await testbed.ingest(
      testbed.newSourceId(),
      { entries: entryIds.map((entryId) => ({ id: entryId, properties: [{ id: 'title', value: entryId }] })) },
      { ...testbed.auth, traceparent: `00-${traceId}-${ingestSpanId}-01` },
    );
    expect(ingest.status).toBe(202);
    // Both handler spans (the thread's SDK exports them) and the three process spans.
    spans = await receiver.waitFor(
      (all) =>
        all.filter((s) => s.name === 'handler work' && s.traceId === traceId).length === 3 &&
        all.filter((s) => s.name === 'process dev-consumer' && s.traceId === traceId).length === 3,
    );
  });

  afterAll(async () => {
    await bed?.close();
  });

  it("each handler run's process span is a child of the ingest's context, in its trace", () => {
    const runs = processSpans();
    expect(runs.map((s) => s.attributes['cloudevents.event_subject']).sort()).toEqual([...entryIds].sort());
    for (const run of runs) {
      expect(run).toMatchObject({ parentSpanId: ingestSpanId, kind: 5 });
      expect(run.attributes).toMatchObject({
        'messaging.destination.name': 'dev-consumer',
        'durable_worker.handler': 'traced',
        'durable_worker.delivery.attempt': 1,
      });
    }
  });

  it('the receive span of the pull links to the ingest context', () => {
    const receive = spans.find((s) => s.name === 'receive dev-consumer' && s.links.some((l) => l.traceId === traceId));
    expect(receive).toBeDefined();
    expect(receive!.links.filter((l) => l.traceId === traceId).map((l) => l.spanId)).toEqual([ingestSpanId, ingestSpanId, ingestSpanId]);
    const run = processSpans()[0]!;
    expect(run.links.map((l) => l.spanId)).toContain(receive!.spanId);
  });

  it("the handler's own span nests under its process span", () => {
    for (const run of processSpans()) {
      const child = spans.find((s) => s.name === 'handler work' && s.parentSpanId === run.spanId);
      expect(child, `no handler span under ${String(run.attributes['cloudevents.event_subject'])}`).toBeDefined();
      expect(child!.attributes['entry.id']).toBe(run.attributes['cloudevents.event_subject']);
    }
  });

  it('a failed handler: error status, the exception, its dead-letter write as a child', () => {
    const failed = processSpans().find((s) => String(s.attributes['cloudevents.event_subject']).startsWith('fail-'))!;
    expect(failed.status).toEqual({ code: 2, message: `cannot handle ${entryIds[2]}` });
    expect(failed.attributes['durable_worker.outcome']).toBe('dead_lettered');
    expect(failed.events[0]).toMatchObject({
      name: 'exception',
      attributes: { 'exception.message': `cannot handle ${entryIds[2]}`, 'exception.stacktrace': expect.stringContaining('traced.mjs') },
    });
    expect(spans.find((s) => s.name === 'dead-letter write' && s.parentSpanId === failed.spanId)).toBeDefined();
    for (const ok of processSpans().filter((s) => s !== failed)) expect(ok.status.code).toBe(0);
  });

  it('the settle span answers for the lease; the claim is a child of the receive', async () => {
    const all = await receiver.waitFor((got) => got.some((s) => s.name === 'settle dev-consumer'));
    const receive = all.find((s) => s.name === 'receive dev-consumer' && s.links.some((l) => l.traceId === traceId))!;
    expect(all.find((s) => s.name === 'settle dev-consumer' && s.parentSpanId === receive.spanId)?.attributes).toMatchObject({
      'durable_worker.ack.sent': 'ok',
      'durable_worker.ack.result': 'committed',
    });
    expect(all.find((s) => s.name === 'idempotency claim' && s.parentSpanId === receive.spanId)).toBeDefined();
  });

  it('log lines of a run carry trace_id and span_id of its process span', () => {
    const dead = logLines.find((l) => typeof l.msg === 'string' && l.msg.includes('dead-lettered'))!;
    const failed = processSpans().find((s) => String(s.attributes['cloudevents.event_subject']).startsWith('fail-'))!;
    expect(dead).toMatchObject({ trace_id: traceId, span_id: failed.spanId });
    if (isolation === 'none') {
      // The handler's ctx.log (in a thread it writes to the thread's stdout, not this logger).
      const handled = logLines.filter((l) => l.msg === 'handled');
      expect(handled).toHaveLength(3);
      for (const line of handled) expect(processSpans().map((s) => s.spanId)).toContain(line.span_id);
    }
  });
});

describe.each(['binary', 'structured'] as const)('the app behind --forward-url joins the trace (--isolation thread, %s mode)', (mode) => {
  const traceId = newTraceId();
  const ingestSpanId = newSpanId();
  let bed: TracedWorker | undefined;
  let receiver: OtlpReceiver;
  let testbed: SourcesTestbed;
  let app: TestApp;

  beforeAll(async () => {
    app = await startTestApp('/events');
    bed = await startTracedWorker('thread', (dir) => ({ handlersDir: join(dir, 'no-handlers'), forwardUrl: app.url, forwardMode: mode, logLevel: 'silent' }));
    ({ receiver, testbed } = bed);
  });

  afterAll(async () => {
    await bed?.close();
    await app?.close();
  });

  it("receives its process span's context as traceparent, and the event's creation context as the extension", async () => {
    const entryId = `fwd-${randomUUID()}`;
    const creation = `00-${traceId}-${ingestSpanId}-01`;
    expect(
      (
        await testbed.ingest(
          testbed.newSourceId(),
          { entries: [{ id: entryId, properties: [{ id: 'title', value: 'x' }] }] },
          { ...testbed.auth, traceparent: creation },
        )
      ).status,
    ).toBe(202);
    const request = await waitFor('the app to get the event', () => app.received.find((r) => r.headers['ce-subject'] === entryId || r.body.includes(entryId)));
    const spans = await receiver.waitFor((all) => all.some((s) => s.name === 'process dev-consumer' && s.traceId === traceId));
    const run = spans.find((s) => s.name === 'process dev-consumer' && s.traceId === traceId)!;
    expect(run.attributes['durable_worker.handler']).toBe('@forward');
    expect(request.headers.traceparent).toBe(`00-${traceId}-${run.spanId}-01`);
    if (mode === 'binary') expect(request.headers['ce-traceparent']).toBe(creation);
    else expect(JSON.parse(request.body)).toMatchObject({ traceparent: creation });
  });
});

describe.each(['none', 'thread'] as const)("a batch handler's call joins its first event's trace (--isolation %s)", (isolation) => {
  const traceId = newTraceId();
  const ingestSpanId = newSpanId();
  const entryIds = [`b-${randomUUID()}`, `b-${randomUUID()}`, `b-${randomUUID()}`];
  let bed: TracedWorker | undefined;
  let receiver: OtlpReceiver;
  let testbed: SourcesTestbed;

  beforeAll(async () => {
    const handlersDir = join(import.meta.dirname, '..', 'fixtures', 'tracing-batch-handlers');
    bed = await startTracedWorker(isolation, () => ({ handlersDir, logLevel: 'silent' }));
    ({ receiver, testbed } = bed);
  });

  afterAll(async () => {
    await bed?.close();
  });

  it("each call's own span is a child of the process span of the first event it holds; every event has its process span", async () => {
    const ingest = await testbed.ingest(
      testbed.newSourceId(),
      { entries: entryIds.map((id) => ({ id, properties: [{ id: 'title', value: id }] })) },
      { ...testbed.auth, traceparent: `00-${traceId}-${ingestSpanId}-01` },
    );
    expect(ingest.status).toBe(202);
    const covered = (all: ReceivedSpan[]) =>
      all.filter((s) => s.name === 'batch work' && s.traceId === traceId).flatMap((s) => String(s.attributes['batch.subjects']).split(','));
    const spans = await receiver.waitFor(
      (all) => covered(all).length === 3 && all.filter((s) => s.name === 'process dev-consumer' && s.traceId === traceId).length === 3,
    );
    const runs = spans.filter((s) => s.name === 'process dev-consumer' && s.traceId === traceId);
    expect(runs.map((s) => s.attributes['cloudevents.event_subject']).sort()).toEqual([...entryIds].sort());
    expect(covered(spans).sort()).toEqual([...entryIds].sort());
    for (const call of spans.filter((s) => s.name === 'batch work' && s.traceId === traceId)) {
      const first = String(call.attributes['batch.subjects']).split(',')[0];
      const parent = runs.find((r) => r.spanId === call.parentSpanId);
      expect(parent?.attributes['cloudevents.event_subject']).toBe(first);
    }
  });
});
