import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { BacklogAgeTracker } from '../../src/observability/backlog.js';
import { METRIC_NAMES, createMetrics } from '../../src/observability/metrics.js';
import type { CloudEvent } from '../../src/types.js';
import type { WorkerEmitter } from '../../src/observability/worker-events.js';

const T0 = Date.parse('2026-11-20T10:00:00.000Z');
const at = (seconds: number) => new Date(T0 + seconds * 1_000).toISOString();

function event(sequence: number, time?: string): CloudEvent {
  return {
    specversion: '1.0',
    id: `e-${sequence}`,
    type: 't',
    subject: `s-${sequence}`,
    sequence: String(sequence),
    data: null,
    ...(time === undefined ? {} : { time }),
  };
}

/** A tracker on a clock the test moves, in seconds after T0. */
function trackerAt(startSeconds = 0) {
  const clock = { seconds: startSeconds };
  const tracker = new BacklogAgeTracker(() => T0 + clock.seconds * 1_000);
  return { tracker, clock };
}

describe('BacklogAgeTracker', () => {
  it('is 0 before the first pull, then the age of the oldest event leased, read when asked', () => {
    const { tracker, clock } = trackerAt(100);
    expect(tracker.ageSeconds()).toBe(0);
    tracker.observeBatch([event(1, at(40)), event(2, at(41)), event(3, at(90))]);
    expect(tracker.ageSeconds()).toBe(60);
    // Nothing newer leased: the process falls behind in real time.
    clock.seconds = 130;
    expect(tracker.ageSeconds()).toBe(90);
  });

  it('rises while the process leases ever older positions and drops to 0 once caught up', () => {
    const { tracker, clock } = trackerAt();
    const ages: number[] = [];
    // Events appended one per second from t=0; the process gets through half a second of them per second.
    for (let t = 10; t <= 60; t += 10) {
      clock.seconds = t;
      tracker.observeBatch([event(t, at(t / 2)), event(t + 1, at(t / 2 + 1))]);
      ages.push(tracker.ageSeconds());
    }
    expect(ages).toEqual([5, 10, 15, 20, 25, 30]);
    tracker.observeCaughtUp(T0 + 61_000);
    clock.seconds = 70;
    expect(tracker.ageSeconds()).toBe(0);
  });

  it('follows the newest position the leases brought; a redelivered older lease does not move it back; caught up clears it', () => {
    const { tracker, clock } = trackerAt(50);
    // Leases overlap: several are held at once, and the newest says how far into the stream the process got.
    tracker.observeBatch([event(1, at(20))]);
    tracker.observeBatch([event(9, at(45))]);
    expect(tracker.ageSeconds()).toBe(5);
    // A redelivery (an expired or failed lease, older events): nothing about what waits in the stream.
    tracker.observeBatch([event(2, at(21))]);
    expect(tracker.ageSeconds()).toBe(5);
    // Nothing more leased: the backlog ages in real time.
    clock.seconds = 60;
    expect(tracker.ageSeconds()).toBe(15);
    tracker.observeCaughtUp(T0 + 60_000);
    clock.seconds = 80;
    expect(tracker.ageSeconds()).toBe(0);
  });

  it('events without a usable time count from the last time the process was caught up (or its start)', () => {
    const { tracker, clock } = trackerAt(10);
    clock.seconds = 25;
    tracker.observeBatch([event(1), event(2, 'not a time')]);
    // Never caught up: since the tracker started at t=10.
    expect(tracker.ageSeconds()).toBe(15);
    tracker.observeCaughtUp(T0 + 30_000);
    clock.seconds = 32;
    tracker.observeBatch([event(3)]);
    clock.seconds = 42;
    expect(tracker.ageSeconds()).toBe(12);
    // A later event's time serves when the first has none.
    tracker.observeBatch([event(4), event(5, at(40))]);
    expect(tracker.ageSeconds()).toBe(2);
  });

  it('an empty batch changes nothing; times ahead of this clock (skew) count as 0, never negative', () => {
    const { tracker } = trackerAt(100);
    tracker.observeBatch([event(1, at(70))]);
    tracker.observeBatch([]);
    expect(tracker.ageSeconds()).toBe(30);
    tracker.observeBatch([event(2, at(105))]);
    expect(tracker.ageSeconds()).toBe(0);
  });

  it('reads offsets and fractions of RFC 3339 times', () => {
    const { tracker } = trackerAt(0);
    tracker.observeBatch([event(1, '2026-11-20T11:59:58.500+02:00')]);
    expect(tracker.ageSeconds()).toBe(1.5);
  });
});

describe('durable_worker_backlog_age_seconds', () => {
  it('is exported per destination from the worker events, 0 before any pull and once caught up', async () => {
    const bus = new EventEmitter() as WorkerEmitter;
    const metrics = createMetrics({ events: bus, destination: 'dest-b', collectDefaultMetrics: false });
    const sample = async () => Number(/^durable_worker_backlog_age_seconds\{destination="dest-b"\} (\S+)$/m.exec(await metrics.registry.metrics())?.[1]);
    try {
      expect(METRIC_NAMES.backlogAge).toBe('durable_worker_backlog_age_seconds');
      expect(await metrics.registry.metrics()).toContain('# TYPE durable_worker_backlog_age_seconds gauge');
      expect(await sample()).toBe(0);
      const appended = new Date(Date.now() - 120_000).toISOString();
      bus.emit('lease:pulled', { workerId: 'w-0', leaseId: 'l', generation: 1, deliveryAttempt: 1, events: [event(1, appended)] });
      const age = await sample();
      expect(age).toBeGreaterThanOrEqual(120);
      expect(age).toBeLessThan(180);
      bus.emit('caught-up', { workerId: 'w-0', at: Date.now() });
      expect(await sample()).toBe(0);
    } finally {
      metrics.close();
    }
  });
});
