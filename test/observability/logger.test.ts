import { EventEmitter } from 'node:events';
import { Writable } from 'node:stream';
import { describe, expect, it, vi } from 'vitest';
import { createLogger, redactUrl } from '../../src/observability/logger.js';
import { startSummary } from '../../src/observability/summary.js';
import type { WorkerEmitter } from '../../src/observability/worker-events.js';

function capture(): { stream: Writable; lines: () => Record<string, unknown>[]; text: () => string } {
  let text = '';
  const stream = new Writable({
    write(chunk, _encoding, callback) {
      text += String(chunk);
      callback();
    },
  });
  return {
    stream,
    text: () => text,
    lines: () =>
      text
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}

const SECRET = 'ultra-secret-4711';

describe('createLogger', () => {
  it('redacts secrets wherever they appear', () => {
    const out = capture();
    const logger = createLogger({ level: 'debug', pretty: false, destination: out.stream });
    logger.info(
      {
        clientSecret: SECRET,
        apiKey: SECRET,
        token: SECRET,
        access_token: SECRET,
        config: { clientSecret: SECRET, apiKey: SECRET, baseUrl: 'http://h' },
        nested: { deeper: { clientSecret: SECRET, token: SECRET } },
        headers: { authorization: `Bearer ${SECRET}`, 'x-api-key': SECRET, accept: 'json' },
        req: { headers: { authorization: `Bearer ${SECRET}` } },
        request: { options: { headers: { authorization: `Bearer ${SECRET}`, 'x-api-key': SECRET } } },
        response: { headers: { 'x-api-key': SECRET } },
      },
      'start',
    );
    const child = logger.child({ workerId: 'w-1' });
    child.debug({ body: { access_token: SECRET, token_type: 'Bearer' } }, 'token');
    expect(out.text()).not.toContain(SECRET);
    const [first, second] = out.lines();
    expect(first?.msg).toBe('start');
    expect((first?.config as Record<string, unknown>).baseUrl).toBe('http://h');
    expect((first?.headers as Record<string, unknown>).accept).toBe('json');
    expect(second?.workerId).toBe('w-1');
    expect((second?.body as Record<string, unknown>).token_type).toBe('Bearer');
  });

  it('honours the level and falls back to JSON when not pretty', () => {
    const out = capture();
    const logger = createLogger({ level: 'warn', pretty: false, destination: out.stream });
    logger.info('hidden');
    logger.warn({ n: 1 }, 'shown');
    expect(out.lines().map((l) => l.msg)).toEqual(['shown']);
  });

  it('pretty output still redacts', () => {
    const out = capture();
    const logger = createLogger({ level: 'info', pretty: true, destination: out.stream });
    logger.info({ clientSecret: SECRET }, 'pretty line');
    logger.flush();
    expect(out.text()).toContain('pretty line');
    expect(out.text()).not.toContain(SECRET);
  });
});

describe('redactUrl', () => {
  it('hides passwords in store URLs and keeps the rest', () => {
    expect(redactUrl('redis://:pw123@cache:6379/0')).toBe('redis://:***@cache:6379/0');
    expect(redactUrl('postgres://app:pw123@db:5432/app?sslmode=require')).toBe('postgres://app:***@db:5432/app?sslmode=require');
    expect(redactUrl('rediss://pw123@cache')).toBe('rediss://***@cache');
    expect(redactUrl('postgres://db/app?password=pw123')).not.toContain('pw123');
    expect(redactUrl('redis://user:pw123@')).not.toContain('pw123');
    expect(redactUrl('memory')).toBe('memory');
    expect(redactUrl('sqlite:/var/lib/x.sqlite')).toBe('sqlite:/var/lib/x.sqlite');
    expect(redactUrl('http://127.0.0.1:8787')).toBe('http://127.0.0.1:8787');
  });
});

describe('startSummary', () => {
  it('logs throughput, lag, backlog age, in flight against the budget, leases held and stale acks per interval', () => {
    vi.useFakeTimers();
    try {
      const out = capture();
      const logger = createLogger({ pretty: false, destination: out.stream });
      const bus = new EventEmitter() as WorkerEmitter;
      let nowMs = 1_000_000;
      const summary = startSummary({ events: bus, logger, intervalMs: 10_000, now: () => nowMs, maxInProgress: 8 });
      const time = new Date(nowMs - 2_500).toISOString();
      const ev = (sequence: string) => ({ specversion: '1.0' as const, id: sequence, type: 't', subject: 's', sequence, time, data: null });
      bus.emit('lease:pulled', { workerId: 'w', leaseId: 'l', generation: 1, deliveryAttempt: 1, events: [ev('10'), ev('11'), ev('12')] });
      for (const outcome of ['ok', 'ok', 'failed', 'duplicate'] as const) {
        bus.emit('run:done', { workerId: 'w', event: ev('10'), handler: 'h', outcome, durationMs: 1 });
      }
      bus.emit('inflight:changed', { inFlight: 2 });
      bus.emit('leases:changed', { held: 3, queued: 40, buffered: 40 });
      bus.emit('ack:done', { workerId: 'w', leaseId: 'l', generation: 1, sent: 'ok', status: 'stale', response: { status: 'stale', committed: '10' } });
      nowMs += 10_000;
      vi.advanceTimersByTime(10_000);
      const line = out.lines().find((l) => l.msg === 'summary');
      expect(line?.summary).toEqual({
        intervalSeconds: 10,
        runsPerSecond: 0.4,
        runs: { ok: 2, failed: 1, duplicate: 1, dead_lettered: 0 },
        lag: '2',
        backlogAgeSeconds: 12.5,
        inFlight: 2,
        budget: '2/8',
        leasesHeld: 3,
        queuedEvents: 40,
        staleAcks: 1,
        pulls: 0,
        // The deprecated names (docs/api.md), same values.
        eventsPerSecond: 0.4,
        events: { ok: 2, failed: 1, duplicate: 1, dead_lettered: 0 },
        bufferedEvents: 40,
      });
      // Counters reset per interval; lag, in flight and leases are levels.
      nowMs += 5_000;
      expect(summary.flush()).toMatchObject({ runsPerSecond: 0, staleAcks: 0, lag: '2', backlogAgeSeconds: 17.5, inFlight: 2, leasesHeld: 3 });
      bus.emit('caught-up', { workerId: 'w', at: nowMs });
      expect(summary.flush()).toMatchObject({ backlogAgeSeconds: 0 });
      summary.stop();
      // Stopped: what the worker reports next is no longer counted.
      bus.emit('run:done', { workerId: 'w', event: ev('13'), handler: 'h', outcome: 'ok', durationMs: 1 });
      nowMs += 5_000;
      expect(summary.flush()).toMatchObject({ runsPerSecond: 0 });
    } finally {
      vi.useRealTimers();
    }
  });
});
