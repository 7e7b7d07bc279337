import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { WorkerEventMap } from '../../src/observability/worker-events.js';
import { startWorker } from '../../src/worker/start.js';
import type { RunningWorker } from '../../src/worker/running-worker.js';
import { scrape, sample } from '../fixtures/scrape.js';
import {
  appendBehave,
  capturingLogger,
  createConsumer,
  emulatorForFile,
  FAST,
  records,
  tempDir,
  untilCaughtUp,
  untilCommitted,
  waitFor,
  workerConfig,
} from './harness.js';

/**
 * Listeners on `worker.events` (metrics, logs, a user's own code) watch the worker and never steer it:
 * one that throws, or rejects, changes no outcome, fails no ack that committed and crashes no pull.
 * Asserted at the edges: what the handlers did (their effects file), what the emulator holds, what
 * /metrics and the logs say.
 */
const t = emulatorForFile();

type EventName = keyof WorkerEventMap;

/** Every event the worker emits on a plain run (pull:crashed and lease:near-deadline have tests of their own); the deprecated names too. */
const ON_EVERY_RUN: EventName[] = ['pull:done', 'lease:pulled', 'run:done', 'inflight:changed', 'ack:done', 'caught-up', 'batch:pulled', 'event:done'];

function throwOn(worker: RunningWorker, names: readonly EventName[], how: 'throw' | 'reject'): Map<EventName, number> {
  const calls = new Map<EventName, number>();
  const bus = worker.events as unknown as import('node:events').EventEmitter;
  for (const name of names) {
    // A listener that returns a rejected promise is what this test is about: the bus must catch it.
    // eslint-disable-next-line @typescript-eslint/no-misused-promises
    bus.on(name, () => {
      calls.set(name, (calls.get(name) ?? 0) + 1);
      if (how === 'throw') throw new Error(`a ${name} listener bug`);
      return Promise.reject(new Error(`an async ${name} listener bug`));
    });
  }
  return calls;
}

describe('a listener that throws changes nothing the worker does', () => {
  for (const how of ['throw', 'reject'] as const) {
    it(`listeners of every event ${how === 'throw' ? 'throw' : 'reject'}: every effect once on its first attempt, every ack committed, no pull crashed`, async () => {
      const dir = tempDir(`listeners-${how}`);
      const record = join(dir, 'effects.log');
      const destination = await createConsumer(t.emulator);
      const { logger, lines } = capturingLogger('info');
      const worker = await startWorker(workerConfig(t.emulator, destination, dir, { workers: 2, limit: 5 }), { logger, timings: FAST });
      t.running.push(worker);
      const calls = throwOn(worker, [...ON_EVERY_RUN, 'ready:changed'], how);
      const crashes: unknown[] = [];
      worker.events.on('pull:crashed', (e) => crashes.push(e.error));
      // Listeners attached before the events exist: every batch goes past them.
      appendBehave(
        t.emulator,
        30,
        () => ({ behaviour: 'sleep', sleepMs: 5, record }),
        (i) => `s-${i % 6}`,
      );

      await untilCommitted(t.emulator, destination);
      await untilCaughtUp(worker, 2);
      const effects = records(record);
      expect(effects).toHaveLength(30);
      expect(new Set(effects.map((e) => e.eventId)).size).toBe(30);
      // No event failed because of a listener: none came back for a second attempt.
      expect(effects.every((e) => e.attempt === 1)).toBe(true);
      for (const name of ON_EVERY_RUN) expect(calls.get(name) ?? 0, name).toBeGreaterThan(0);
      expect(crashes).toEqual([]);

      const text = await scrape(worker.metricsUrl);
      expect(sample(text, 'durable_worker_acks_total', { status: 'error' })).toBe(0);
      expect(sample(text, 'durable_worker_acks_total', { status: 'requeued' })).toBe(0);
      expect(sample(text, 'durable_worker_acks_total', { status: 'committed' })).toBeGreaterThanOrEqual(6);
      expect(sample(text, 'durable_worker_events_total', { type: 'behave.test', outcome: 'ok' })).toBe(30);
      expect(sample(text, 'durable_worker_events_total', { type: 'behave.test', outcome: 'failed' })).toBeUndefined();
      for (const name of ON_EVERY_RUN) {
        expect(sample(text, 'durable_worker_listener_errors_total', { event: name }), name).toBeGreaterThanOrEqual(1);
      }
      // Logged with the event's name, once a minute per event at most.
      const logged = lines().filter((l) => typeof l.msg === 'string' && l.msg.startsWith('a listener of the worker'));
      expect(new Set(logged.map((l) => l.event))).toEqual(new Set([...ON_EVERY_RUN, 'ready:changed']));
      expect(logged.length).toBe(ON_EVERY_RUN.length + 1);
      expect(worker.ready).toBe(true);
    });
  }

  it('a throwing lease:near-deadline listener: the batch cut at its deadline is requeued and retried, the loop goes on', async () => {
    const dir = tempDir('listeners-deadline');
    const record = join(dir, 'effects.log');
    const destination = await createConsumer(t.emulator);
    const worker = await startWorker(workerConfig(t.emulator, destination, dir, { visibilitySeconds: 2 }), { logger: capturingLogger().logger, timings: FAST });
    t.running.push(worker);
    const calls = throwOn(worker, ['lease:near-deadline'], 'throw');
    const crashes: unknown[] = [];
    worker.events.on('pull:crashed', (e) => crashes.push(e.error));
    // Slower than the batch deadline on the first attempt (it honours ctx.signal): cut, requeued.
    appendBehave(t.emulator, 3, () => ({ behaviour: 'sleep', sleepMs: 60_000, onlyOnAttempt: 1, record }));

    await untilCommitted(t.emulator, destination);
    await waitFor('the effects of the retries', () => records(record).length >= 3);
    expect(records(record).map((e) => e.attempt)).toEqual([2, 2, 2]);
    expect(calls.get('lease:near-deadline')).toBeGreaterThanOrEqual(1);
    expect(crashes).toEqual([]);
    const text = await scrape(worker.metricsUrl);
    expect(sample(text, 'durable_worker_acks_total', { status: 'requeued' })).toBe(1);
    expect(sample(text, 'durable_worker_listener_errors_total', { event: 'lease:near-deadline' })).toBe(calls.get('lease:near-deadline'));
  });
});
