/**
 * End to end: the worker in forwarding mode (`forwardUrl`, isolation none, memory store) pulls from
 * the emulator over real HTTP and forwards every event to a small real app. The app's answers map to
 * ok / dead-letter / retry, and nothing is lost: every event ends 2xx-acknowledged by the app or in
 * the dead-letter file, and the consumer commits the whole stream.
 */
import { mkdtempSync, readFileSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { startWorker } from '../../src/worker/start.js';
import type { WorkerConfig } from '../../src/config/types.js';
import type { CloudEvent } from '../../src/types.js';
import type { DeadLetterRecord } from '../../src/dead-letter/sink.js';
import { waitFor } from '../fixtures/wait-for.js';
import { startTestApp, type TestApp } from './app-server.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function forwardingConfig(emulator: RunningEmulator, app: TestApp, dir: string, overrides: Partial<WorkerConfig> = {}): WorkerConfig {
  const id = randomUUID().slice(0, 8);
  return {
    baseUrl: emulator.url,
    authUrl: emulator.url,
    destination: 'dev-consumer',
    tenant: 'dev-tenant',
    clientId: 'dev-client',
    clientSecret: 'dev-secret',
    handlersDir: join(dir, 'no-handlers'),
    workers: 1,
    workerIdPrefix: `e2e-${id}`,
    limit: 20,
    visibilitySeconds: 2,
    concurrency: 8,
    maxAttempts: 3,
    idempotencyUrl: 'memory',
    idempotencyPrefix: `e2e-${id}`,
    idempotencyTtlMs: 60_000,
    deadLetterUrl: `file:${join(dir, 'dead-letter.jsonl')}`,
    metricsPort: 0,
    metricsHost: '127.0.0.1',
    exitWhenIdle: false,
    logLevel: 'silent',
    isolation: 'none',
    shutdownTimeoutSeconds: 1,
    forwardUrl: app.url,
    forwardMode: 'binary',
    ...overrides,
  };
}

function deadLetters(dir: string): DeadLetterRecord[] {
  const file = join(dir, 'dead-letter.jsonl');
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as DeadLetterRecord);
}

describe('worker in forwarding mode against the emulator and a real app', () => {
  it('maps 2xx/4xx/408/429/5xx/timeouts to ok/dead-letter/retry and loses nothing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dw-forward-e2e-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const emulator = await startEmulator({ port: 0 });
    cleanups.push(() => emulator.close());
    const app = await startTestApp('/events');
    cleanups.push(() => app.close());

    const scenario: Array<[string, Parameters<typeof app.behaviours.set>[1]]> = [
      ['ok-200', 200],
      ['ok-204', 204],
      ['bad-422', 422],
      ['gone-404', 404],
      ['flaky-503-then-200', [503, 200]],
      ['timeout-408-then-200', [408, 202]],
      ['throttled-429-then-200', [429, 200]],
      ['hangs-then-200', ['hang', 200]],
      ['always-500', 500],
    ];
    const events: CloudEvent[] = emulator.appendEvents(
      'dev-tenant',
      scenario.map(([subject]) => ({ type: 'e2e.forward', subject, data: { subject, note: 'payload' } })),
    );
    const bySubject = new Map(events.map((e) => [e.subject, e]));
    for (const [subject, behaviour] of scenario) app.behaviours.set(bySubject.get(subject)!.id, behaviour);
    const lastSequence = events.at(-1)!.sequence;

    const worker = await startWorker(forwardingConfig(emulator, app, dir));
    cleanups.push(() => worker.close());

    // Nothing lost: the consumer commits through the last event, with nothing leased or pending.
    await waitFor('the whole stream committed', () => {
      const consumer = emulator
        .state()
        .tenants.find((t) => t.id === 'dev-tenant')
        ?.consumers.find((c) => c.id === 'dev-consumer');
      return consumer !== undefined && consumer.committed === lastSequence && consumer.leased === 0 && consumer.pendingRedelivery === 0;
    });

    const answers = (subject: string) => app.received.filter((r) => r.eventId === bySubject.get(subject)!.id).length;
    // 2xx on the first try: forwarded exactly once (the idempotency store skips them on redelivery).
    expect(answers('ok-200')).toBe(1);
    expect(answers('ok-204')).toBe(1);
    // 4xx: dead-lettered at once, never retried.
    expect(answers('bad-422')).toBe(1);
    expect(answers('gone-404')).toBe(1);
    // 408/429/5xx/timeout: retried until the app said 2xx.
    expect(answers('flaky-503-then-200')).toBe(2);
    expect(answers('timeout-408-then-200')).toBe(2);
    expect(answers('throttled-429-then-200')).toBe(2);
    expect(answers('hangs-then-200')).toBe(2);
    // always 5xx: tried --max-attempts times, then dead-lettered.
    expect(answers('always-500')).toBe(3);

    const letters = await waitFor('dead letters written', () => {
      const all = deadLetters(dir);
      return all.length >= 3 ? all : undefined;
    });
    const lettered = letters
      .map((l) => ({ subject: l.event.subject, handler: l.handler, reason: l.reason }))
      .sort((a, b) => a.subject.localeCompare(b.subject));
    expect(lettered).toEqual([
      { subject: 'always-500', handler: '@forward', reason: 'max-attempts' },
      { subject: 'bad-422', handler: '@forward', reason: 'permanent' },
      { subject: 'gone-404', handler: '@forward', reason: 'permanent' },
    ]);

    // The wire: binary CloudEvents, data as JSON body, and no credential of the worker ever sent.
    const first = app.received.find((r) => r.eventId === bySubject.get('ok-200')!.id)!;
    expect(first.headers['ce-sequence']).toBe(bySubject.get('ok-200')!.sequence);
    expect(first.headers['ce-type']).toBe('e2e.forward');
    expect(JSON.parse(first.body)).toEqual({ subject: 'ok-200', note: 'payload' });
    for (const request of app.received) {
      const wire = JSON.stringify(request.headers) + request.body;
      expect(wire).not.toContain('dev-secret');
      expect(wire.toLowerCase()).not.toContain('bearer');
      expect(request.headers.authorization).toBeUndefined();
      expect(request.headers['x-api-key']).toBeUndefined();
    }

    // The outcomes show in the worker's metrics.
    expect(worker.metricsUrl).toBeDefined();
    const metrics = await (await fetch(`${worker.metricsUrl!.replace(/\/metrics$/, '')}/metrics`)).text();
    expect(metrics).toMatch(/^durable_worker_events_total\{type="e2e\.forward",outcome="dead_lettered"\} 3$/m);
    expect(metrics).toMatch(/^durable_worker_events_total\{type="e2e\.forward",outcome="ok"\} 6$/m);
  });

  it('structured mode end to end', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dw-forward-e2e-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const emulator = await startEmulator({ port: 0 });
    cleanups.push(() => emulator.close());
    const app = await startTestApp('/events');
    cleanups.push(() => app.close());
    const [event] = emulator.appendEvents('dev-tenant', [{ type: 'e2e.structured', subject: 'entry-9', data: { n: 9 } }]);
    const worker = await startWorker(forwardingConfig(emulator, app, dir, { forwardMode: 'structured' }));
    cleanups.push(() => worker.close());
    await app.waitForRequests(1);
    const got = app.received[0]!;
    expect(got.headers['content-type']).toBe('application/cloudevents+json');
    expect(JSON.parse(got.body)).toMatchObject({
      specversion: '1.0',
      id: event!.id,
      type: 'e2e.structured',
      subject: 'entry-9',
      sequence: event!.sequence,
      data: { n: 9 },
    });
  });

  it('isolation thread: the forwarding handler runs in worker threads with the same outcomes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dw-forward-e2e-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const emulator = await startEmulator({ port: 0 });
    cleanups.push(() => emulator.close());
    const app = await startTestApp('/events');
    cleanups.push(() => app.close());
    const events = emulator.appendEvents('dev-tenant', [
      { type: 'e2e.thread', subject: 'ok', data: {} },
      { type: 'e2e.thread', subject: 'bad', data: {} },
      { type: 'e2e.thread', subject: 'flaky', data: {} },
    ]);
    app.behaviours.set(events[1]!.id, 400);
    app.behaviours.set(events[2]!.id, [502, 200]);
    const worker = await startWorker(forwardingConfig(emulator, app, dir, { isolation: 'thread' }));
    cleanups.push(() => worker.close());
    await waitFor('the stream committed', () => {
      const consumer = emulator
        .state()
        .tenants.find((t) => t.id === 'dev-tenant')
        ?.consumers.find((c) => c.id === 'dev-consumer');
      return consumer?.committed === events[2]!.sequence && consumer.leased === 0;
    });
    expect(app.received.filter((r) => r.eventId === events[2]!.id)).toHaveLength(2);
    const letters = await waitFor('a dead letter', () => (deadLetters(dir).length > 0 ? deadLetters(dir) : undefined));
    expect(letters.map((l) => [l.event.subject, l.handler, l.reason])).toEqual([['bad', '@forward', 'permanent']]);
  });
});
