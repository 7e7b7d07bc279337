import { context, trace } from '@opentelemetry/api';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { handlerScope, NOOP_TRACER, startTracing, type Tracing } from '../../src/tracing/index.js';
import { exportSettings } from '../../src/tracing/sdk.js';
import type { CloudEvent, LeaseBatch } from '../../src/types.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from './otlp-receiver.js';

const CREATION = { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7' };

function event(id: string, traced: boolean): CloudEvent {
  return {
    specversion: '1.0',
    id,
    type: 'source_entry.updated',
    subject: `entry-${id}`,
    sequence: id,
    data: null,
    ...(traced ? { traceparent: `00-${CREATION.traceId}-${CREATION.spanId}-01`, tracestate: 'vendor=1' } : {}),
  };
}

const batch: LeaseBatch = { leaseId: 'lease-1', generation: 2, attempt: 3, events: [event('1', true), event('2', false)] };
const ctx = { attempt: 1, deliveryAttempt: 3, generation: 2, workerId: 'w-0', leaseId: 'lease-1', leaseDeadlineMs: Date.now() + 60_000 };

/** One lease's life through the tracer: a traced and an untraced event, one of them failing. */
async function traceOneLease(tracing: Tracing): Promise<void> {
  const lease = tracing.tracer.received({ workerId: 'w-0', pulled: batch, pulledAtMs: Date.now() - 5 });
  await lease.call('idempotency claim', async () => 'claimed');
  const ok = lease.process({ handler: 'orders/sync', event: batch.events[0]!, ctx });
  // The handler's own span, made through the API in the run's scope (as a handler thread does).
  await handlerScope().run(ok.carrier, async () => {
    await new Promise((resolve) => setImmediate(resolve));
    trace.getTracer('handler').startActiveSpan('db insert', (span) => span.end());
  });
  ok.end('ok');
  const failed = lease.process({ handler: 'orders/sync', event: batch.events[1]!, ctx });
  await failed.call('dead-letter write', async () => undefined);
  failed.end('dead_lettered', { message: 'boom', code: 'DW_ERR_PERMANENT', stack: 'PermanentError: boom\n    at handler' });
  const settle = lease.settle('ok');
  await settle.call('idempotency mark done', async () => undefined);
  settle.end('committed');
}

describe('tracing off', () => {
  it('is the no-op tracer and the identity handler scope', async () => {
    const tracing = await startTracing({ enabled: false, destination: 'd' });
    expect(tracing.tracer).toBe(NOOP_TRACER);
    expect(handlerScope().activeCarrier()).toBeUndefined();
    const run = tracing.tracer.received({ workerId: 'w', pulled: batch, pulledAtMs: 0 }).process({ handler: 'h', event: batch.events[0]!, ctx });
    expect(run.carrier).toBeUndefined();
  });

  it('stays off with OTEL_SDK_DISABLED=true even with --otel', async () => {
    const tracing = await startTracing({ enabled: true, destination: 'd', env: { OTEL_SDK_DISABLED: 'true' } });
    expect(tracing.tracer.enabled).toBe(false);
  });
});

describe('the exporter settings from the standard variables', () => {
  it('defaults to OTLP over http/protobuf and honours the traces-specific protocol first', () => {
    expect(exportSettings({})).toEqual({ exporters: ['otlp'], protocol: 'http/protobuf' });
    expect(exportSettings({ OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json' }).protocol).toBe('http/json');
    expect(exportSettings({ OTEL_TRACES_EXPORTER: 'none' }).exporters).toEqual([]);
  });

  it('refuses what it cannot honour, naming the variable', () => {
    expect(() => exportSettings({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toThrow(ConfigError);
    expect(() => exportSettings({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toThrow(/OTEL_EXPORTER_OTLP_PROTOCOL must be http\/protobuf or http\/json/);
    expect(() => exportSettings({ OTEL_TRACES_EXPORTER: 'zipkin' })).toThrow(/OTEL_TRACES_EXPORTER/);
  });
});

describe.each(['http/protobuf', 'http/json'] as const)('spans exported over OTLP %s to a real receiver', (protocol) => {
  let receiver: OtlpReceiver;
  let spans: ReceivedSpan[];
  const byName = (name: string) => spans.filter((s) => s.name === name);

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    // The exporter and the resource read the process environment, as in production.
    vi.stubEnv('OTEL_EXPORTER_OTLP_ENDPOINT', receiver.url);
    vi.stubEnv('OTEL_EXPORTER_OTLP_PROTOCOL', protocol);
    vi.stubEnv('OTEL_SERVICE_NAME', 'orders-worker');
    const tracing = await startTracing({ enabled: true, destination: 'dev-consumer' });
    await traceOneLease(tracing);
    await tracing.close();
    spans = await receiver.waitFor((all) => all.length >= 8);
  });
  afterAll(async () => {
    vi.unstubAllEnvs();
    await receiver.close();
  });
  afterEach(() => expect(context.active()).toBeDefined());

  it('arrive in the protocol asked for, with the service name from OTEL_SERVICE_NAME', () => {
    expect(new Set(receiver.contentTypes)).toEqual(new Set([protocol === 'http/json' ? 'application/json' : 'application/x-protobuf']));
    expect(spans.every((s) => s.resource['service.name'] === 'orders-worker')).toBe(true);
  });

  it('a receive span per pull, linked to the creation context of each traced event', () => {
    const [receive] = byName('receive dev-consumer');
    expect(receive).toMatchObject({ kind: 5, parentSpanId: undefined });
    expect(receive!.attributes).toMatchObject({
      'messaging.system': 'data_platform',
      'messaging.operation.type': 'receive',
      'messaging.destination.name': 'dev-consumer',
      'messaging.batch.message_count': 2,
    });
    expect(receive!.links).toEqual([{ ...CREATION, attributes: { 'messaging.message.id': '1' } }]);
  });

  it("a traced event's process span is the child of its creation context, linked to it and to the receive", () => {
    const receive = byName('receive dev-consumer')[0]!;
    const process = byName('process dev-consumer').find((s) => s.attributes['messaging.message.id'] === '1')!;
    expect(process).toMatchObject({ kind: 5, traceId: CREATION.traceId, parentSpanId: CREATION.spanId, status: { code: 0 } });
    expect(process.links.map((l) => l.spanId)).toEqual([CREATION.spanId, receive.spanId]);
    expect(process.attributes).toMatchObject({
      'messaging.operation.type': 'process',
      'messaging.consumer.group.name': 'dev-consumer',
      'messaging.client.id': 'w-0',
      'cloudevents.event_subject': 'entry-1',
      'durable_worker.event.sequence': '1',
      'durable_worker.lease.id': 'lease-1',
      'durable_worker.lease.generation': 2,
      'durable_worker.delivery.attempt': 3,
      'durable_worker.handler': 'orders/sync',
      'durable_worker.outcome': 'ok',
    });
    const handlerSpan = byName('db insert')[0]!;
    expect(handlerSpan).toMatchObject({ traceId: CREATION.traceId, parentSpanId: process.spanId });
  });

  it("an untraced event's process span is the receive span's child; a failure has error status and the exception", () => {
    const receive = byName('receive dev-consumer')[0]!;
    const failed = byName('process dev-consumer').find((s) => s.attributes['messaging.message.id'] === '2')!;
    expect(failed).toMatchObject({ traceId: receive.traceId, parentSpanId: receive.spanId, status: { code: 2, message: 'boom' } });
    expect(failed.attributes).toMatchObject({ 'durable_worker.outcome': 'dead_lettered', 'error.type': 'DW_ERR_PERMANENT' });
    expect(failed.events).toEqual([
      {
        name: 'exception',
        attributes: expect.objectContaining({
          'exception.message': 'boom',
          'exception.type': 'DW_ERR_PERMANENT',
          'exception.stacktrace': expect.stringContaining('at handler'),
        }),
      },
    ]);
    expect(byName('dead-letter write')[0]).toMatchObject({ traceId: failed.traceId, parentSpanId: failed.spanId });
  });

  it('the settle span and the store calls are children where they happen', () => {
    const receive = byName('receive dev-consumer')[0]!;
    const settle = byName('settle dev-consumer')[0]!;
    expect(settle).toMatchObject({ kind: 3, parentSpanId: receive.spanId });
    expect(settle.attributes).toMatchObject({
      'messaging.operation.type': 'settle',
      'durable_worker.ack.sent': 'ok',
      'durable_worker.ack.result': 'committed',
    });
    expect(byName('idempotency claim')[0]).toMatchObject({ parentSpanId: receive.spanId });
    expect(byName('idempotency mark done')[0]).toMatchObject({ parentSpanId: settle.spanId });
  });
});
