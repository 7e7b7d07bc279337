import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { LagTracker } from '../../src/observability/lag.js';
import { createLogger } from '../../src/observability/logger.js';
import { DROPPED_DEFAULT_METRICS, METRIC_NAMES, createMetrics } from '../../src/observability/metrics.js';
import { observeStreamPosition } from '../../src/observability/stream-position.js';
import { startSummary } from '../../src/observability/summary.js';
import type { CloudEvent } from '../../src/types.js';
import type { WorkerEmitter } from '../../src/observability/worker-events.js';

function event(sequence: string, type = 'source_entry.updated'): CloudEvent {
  return { specversion: '1.0', id: `evt-${sequence}`, type, subject: `entry-${sequence}`, sequence, data: {} };
}

function sampleValue(text: string, name: string, labels = ''): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name}${labels} `) || (labels === '' && l.startsWith(`${name} `)));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('createMetrics', () => {
  it('exposes every CONTRACT metric, derived from worker events', async () => {
    const bus = new EventEmitter() as WorkerEmitter;
    const metrics = createMetrics({ events: bus, destination: 'dest-m1' });
    const batch = [event('41'), event('42'), event('43', 'other.created')];
    bus.emit('pull:done', { workerId: 'w-0', status: '200', eventCount: 3, durationMs: 12 });
    bus.emit('pull:done', { workerId: 'w-0', status: '204', eventCount: 0, durationMs: 3 });
    bus.emit('lease:pulled', { workerId: 'w-0', leaseId: 'l1', generation: 1, deliveryAttempt: 1, events: batch });
    bus.emit('inflight:changed', { inFlight: 3 });
    bus.emit('run:done', { workerId: 'w-0', event: batch[0]!, handler: 'a', outcome: 'ok', durationMs: 20 });
    bus.emit('run:done', { workerId: 'w-0', event: batch[1]!, handler: 'a', outcome: 'duplicate', durationMs: 0 });
    bus.emit('run:done', { workerId: 'w-0', event: batch[2]!, handler: 'b', outcome: 'dead_lettered', durationMs: 2_000 });
    bus.emit('ack:done', {
      workerId: 'w-0',
      leaseId: 'l1',
      generation: 1,
      sent: 'ok',
      status: 'committed',
      response: { status: 'committed', committed: '42' },
      lastSequence: '43',
    });
    bus.emit('ack:done', { workerId: 'w-0', leaseId: 'l0', generation: 1, sent: 'ok', status: 'stale', response: { status: 'stale', committed: '42' } });
    bus.emit('caught-up', { workerId: 'w-0', at: 1_700_000_000_500 });

    const text = await metrics.registry.metrics();
    for (const name of Object.values(METRIC_NAMES)) expect(text).toContain(`# TYPE ${name} `);
    expect(text).toContain(`# TYPE ${METRIC_NAMES.handlerDuration} histogram`);
    expect(sampleValue(text, METRIC_NAMES.events, '{type="source_entry.updated",outcome="ok"}')).toBe(1);
    expect(sampleValue(text, METRIC_NAMES.events, '{type="source_entry.updated",outcome="duplicate"}')).toBe(1);
    expect(sampleValue(text, METRIC_NAMES.events, '{type="other.created",outcome="dead_lettered"}')).toBe(1);
    // The new name counts the same runs.
    for (const labels of [
      '{type="source_entry.updated",outcome="ok"}',
      '{type="source_entry.updated",outcome="duplicate"}',
      '{type="other.created",outcome="dead_lettered"}',
    ])
      expect(sampleValue(text, METRIC_NAMES.runs, labels)).toBe(1);
    // Duplicates never ran a handler: only two observations.
    expect(sampleValue(text, `${METRIC_NAMES.handlerDuration}_count`, '{type="source_entry.updated"}')).toBe(1);
    expect(sampleValue(text, `${METRIC_NAMES.handlerDuration}_bucket`, '{le="0.025",type="source_entry.updated"}')).toBe(1);
    expect(sampleValue(text, `${METRIC_NAMES.handlerDuration}_sum`, '{type="other.created"}')).toBe(2);
    expect(sampleValue(text, METRIC_NAMES.pulls, '{status="200"}')).toBe(1);
    expect(sampleValue(text, METRIC_NAMES.pulls, '{status="204"}')).toBe(1);
    expect(sampleValue(text, METRIC_NAMES.pulls, '{status="429"}')).toBe(0);
    expect(sampleValue(text, METRIC_NAMES.acks, '{status="committed"}')).toBe(1);
    expect(sampleValue(text, METRIC_NAMES.acks, '{status="stale"}')).toBe(1);
    expect(sampleValue(text, METRIC_NAMES.acks, '{status="error"}')).toBe(0);
    expect(sampleValue(text, METRIC_NAMES.lag, '{destination="dest-m1"}')).toBe(1);
    expect(sampleValue(text, METRIC_NAMES.committedSequence, '{destination="dest-m1"}')).toBe(42);
    expect(sampleValue(text, METRIC_NAMES.inFlight)).toBe(3);
    expect(sampleValue(text, METRIC_NAMES.lastCaughtUp)).toBe(1_700_000_000.5);
    // Default process metrics live in the same, private registry.
    expect(text).toContain('process_cpu_user_seconds_total');
    // ...less prom-client's gauges named `_total` (promtool lint); their per-type gauges stay.
    for (const name of DROPPED_DEFAULT_METRICS) expect(text).not.toContain(`# TYPE ${name} `);
    expect(text).toContain('# TYPE nodejs_active_handles gauge');
    metrics.close();
  });

  it('stops listening on close and keeps its own registry', async () => {
    const bus = new EventEmitter() as WorkerEmitter;
    const a = createMetrics({ events: bus, destination: 'dest-a', collectDefaultMetrics: false });
    const b = createMetrics({ events: bus, destination: 'dest-b', collectDefaultMetrics: false });
    a.close();
    bus.emit('pull:done', { workerId: 'w', status: '5xx', eventCount: 0, durationMs: 1 });
    expect(sampleValue(await a.registry.metrics(), METRIC_NAMES.pulls, '{status="5xx"}')).toBe(0);
    expect(sampleValue(await b.registry.metrics(), METRIC_NAMES.pulls, '{status="5xx"}')).toBe(1);
    expect(await a.registry.metrics()).not.toContain('process_cpu_user_seconds_total');
    b.close();
    bus.emit('pull:done', { workerId: 'w', status: '5xx', eventCount: 0, durationMs: 1 });
    expect(sampleValue(await b.registry.metrics(), METRIC_NAMES.pulls, '{status="5xx"}')).toBe(1);
  });
});

describe('a shared stream position', () => {
  it('scans each batch once for the metrics and the summary line, which report the same lag and outlive each other', async () => {
    const bus = new EventEmitter() as WorkerEmitter;
    const position = observeStreamPosition(bus);
    const metrics = createMetrics({ events: bus, destination: 'dest-s', collectDefaultMetrics: false, position });
    const summary = startSummary({ events: bus, logger: createLogger({ level: 'silent', pretty: false }), position });
    let scans = 0;
    const observeEvents = position.lag.observeEvents.bind(position.lag);
    position.lag.observeEvents = (events) => {
      scans++;
      observeEvents(events);
    };
    bus.emit('lease:pulled', { workerId: 'w', leaseId: 'l', generation: 1, deliveryAttempt: 1, events: [event('5'), event('9')] });
    bus.emit('ack:done', {
      workerId: 'w',
      leaseId: 'l',
      generation: 1,
      sent: 'ok',
      status: 'committed',
      response: { status: 'committed', committed: '6' },
      lastSequence: '9',
    });
    // Read by the metrics and the summary, each batch is scanned once.
    expect(scans).toBe(1);
    expect(sampleValue(await metrics.registry.metrics(), METRIC_NAMES.lag, '{destination="dest-s"}')).toBe(3);
    expect(summary.flush().lag).toBe('3');
    // A reader's close leaves a position it was given to the others.
    metrics.close();
    bus.emit('ack:done', { workerId: 'w', leaseId: 'l', generation: 1, sent: 'ok', status: 'committed', response: { status: 'committed', committed: '9' } });
    expect(summary.flush().lag).toBe('0');
    summary.stop();
    position.close();
    // Closed, the position scans no more batches.
    bus.emit('lease:pulled', { workerId: 'w', leaseId: 'l2', generation: 1, deliveryAttempt: 1, events: [event('12')] });
    expect(scans).toBe(1);
  });
});

describe('LagTracker', () => {
  it('computes lag with sequences beyond 2^53', () => {
    const lag = new LagTracker();
    const base = 2n ** 64n;
    lag.observeEvents([event((base + 1n).toString()), event((base + 7n).toString())]);
    // Before the first commit, everything seen counts.
    expect(lag.lag).toBe(7n);
    lag.observeAck({ committed: (base + 3n).toString() });
    expect(lag.lag).toBe(4n);
    // An older commit from another worker never moves the cursor back.
    lag.observeAck({ committed: (base + 2n).toString() });
    expect(lag.committed).toBe(base + 3n);
    // Another replica committed past what we saw: lag is zero, not negative.
    lag.observeAck({ committed: (base + 100n).toString() });
    expect(lag.lag).toBe(0n);
    lag.observeAck({ committed: null }, (base + 105n).toString());
    expect(lag.lag).toBe(5n);
  });

  it('takes the lowest and highest sequence of a batch in any order, zero-padded or not', () => {
    const lag = new LagTracker();
    lag.observeEvents([event('120'), event('99'), event('0100'), event('1000'), event('998')]);
    // Seen 99..1000 before any commit.
    expect(lag.lag).toBe(902n);
    lag.observeAck({ committed: '0990' });
    expect(lag.lag).toBe(10n);
  });

  it('ignores malformed sequences', () => {
    const lag = new LagTracker();
    lag.observeEvents([event('abc'), event('-1'), event('1e3')]);
    lag.observeAck({ committed: 'x' });
    expect(lag.lag).toBe(0n);
    expect(lag.committed).toBeUndefined();
  });
});
