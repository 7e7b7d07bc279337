import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startWorker } from '../../src/worker/start.js';
import type { RunningWorker } from '../../src/worker/running-worker.js';
import type { BreakerChange } from '../../src/observability/worker-events.js';
import { sample as metric } from '../fixtures/scrape.js';
import {
  appendBehave,
  consumerState,
  createConsumer,
  deadLetters,
  emulatorForFile,
  FAST,
  records,
  silent,
  tempDir,
  untilCommitted,
  waitFor,
  workerConfig,
} from './harness.js';

/**
 * Failures that heal (docs/handlers.md, "Failures and retries"): attempts are counted per event and
 * handler, a failed run waits its backoff (or the handler's own wait) and retries in its lease, a
 * wait longer than a lease is carried by the store, and a handler's breaker parks its events while
 * its dependency is down, so that a transient failure never dead-letters a healthy event.
 * test/model/ checks the same rules on generated workloads.
 */
const t = emulatorForFile();

/** `<event id> <attempt> <epoch ms>` per run, as the behave fixture writes them at each run's start. */
function runsIn(file: string): { eventId: string; attempt: number; atMs: number }[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      const [eventId, attempt, atMs] = line.split(' ');
      return { eventId: eventId as string, attempt: Number(attempt), atMs: Number(atMs) };
    });
}

function ackStatuses(worker: RunningWorker): string[] {
  const acks: string[] = [];
  worker.events.on('ack:done', (e) => acks.push(e.status));
  return acks;
}

function pulledLeases(worker: RunningWorker): number[] {
  const pulled: number[] = [];
  worker.events.on('lease:pulled', () => pulled.push(Date.now()));
  return pulled;
}

for (const isolation of ['none', 'thread'] as const) {
  describe(`failure handling (isolation ${isolation})`, () => {
    it("a failure on an event's first run never dead-letters it, however often its subject's leases come and go; only the poison events are", async () => {
      const dir = tempDir('first-run');
      const record = join(dir, 'effects.log');
      const destination = await createConsumer(t.emulator);
      // 400 events over 40 subjects (chains across leases); every 10th fails its first run; 3 always fail.
      const poison = new Set([57, 211, 333]);
      const events = appendBehave(
        t.emulator,
        400,
        (i) => (poison.has(i) ? { behaviour: 'fail', record } : i % 10 === 0 ? { behaviour: 'fail-until', untilAttempt: 2, record } : { record }),
        (i) => `s-${i % 40}`,
      );
      const worker = await startWorker(workerConfig(t.emulator, destination, dir, { isolation, maxAttempts: 3, workers: 4, limit: 50 }), {
        logger: silent,
        timings: FAST,
      });
      t.running.push(worker);
      const acks = ackStatuses(worker);
      await untilCommitted(t.emulator, destination, 60_000);

      const dead = deadLetters(join(dir, 'dead-letter.jsonl'));
      expect(dead.map((d) => [d.event.id, d.reason, d.attempt]).sort()).toEqual([...poison].map((i) => [events[i]?.id, 'max-attempts', 3]).sort());
      for (const d of dead) expect(Date.parse(d.lastFailedAt as string)).toBeGreaterThanOrEqual(Date.parse(d.firstFailedAt as string));
      const effects = records(record);
      expect(effects).toHaveLength(397);
      expect(new Set(effects.map((e) => e.eventId)).size).toBe(397);
      // The healthy ones that failed once took effect on their handler's attempt 2.
      expect(effects.filter((e) => e.attempt === 2)).toHaveLength(40);
      // Retried in their leases: no lease went back for a failure.
      expect(acks.filter((status) => status === 'requeued')).toEqual([]);
    });

    it('a failed run waits its backoff, doubling, while the other subjects go on', async () => {
      const dir = tempDir('backoff');
      const runsFile = join(dir, 'runs.log');
      const record = join(dir, 'effects.log');
      const destination = await createConsumer(t.emulator);
      const [flaky] = appendBehave(
        t.emulator,
        1,
        () => ({ behaviour: 'fail-until', untilAttempt: 3, runsFile, record }),
        () => 'flaky',
      );
      appendBehave(
        t.emulator,
        30,
        () => ({ record }),
        (i) => `other-${i}`,
      );
      const worker = await startWorker(workerConfig(t.emulator, destination, dir, { isolation, retryBackoffMinMs: 300, retryBackoffMaxMs: 5_000 }), {
        logger: silent,
        timings: FAST,
      });
      t.running.push(worker);
      await untilCommitted(t.emulator, destination, 30_000);

      const runs = runsIn(runsFile);
      expect(runs.map((r) => r.attempt)).toEqual([1, 2, 3]);
      const [first, second, third] = runs.map((r) => r.atMs) as [number, number, number];
      // 300 ms, then 600 ms, each up to a quarter longer.
      expect(second - first).toBeGreaterThanOrEqual(300);
      expect(second - first).toBeLessThan(300 * 1.25 + 250);
      expect(third - second).toBeGreaterThanOrEqual(600);
      const effects = records(record);
      expect(effects).toHaveLength(31);
      // Every other subject took effect before the flaky event's second run.
      const flakyAt = effects.findIndex((e) => e.eventId === flaky?.id);
      expect(flakyAt).toBe(30);
    });

    it("RetryLaterError: the handler's own wait is honoured, capped by --retry-backoff-max", async () => {
      const dir = tempDir('retry-later');
      const runsFile = join(dir, 'runs.log');
      const destination = await createConsumer(t.emulator);
      const [asksLittle] = appendBehave(
        t.emulator,
        1,
        () => ({ behaviour: 'retry-later', afterMs: 700, onlyOnAttempt: 1, runsFile }),
        () => 'little',
      );
      const [asksMuch] = appendBehave(
        t.emulator,
        1,
        () => ({ behaviour: 'retry-later', afterMs: 60_000, onlyOnAttempt: 1, runsFile }),
        () => 'much',
      );
      const worker = await startWorker(workerConfig(t.emulator, destination, dir, { isolation, retryBackoffMinMs: 10, retryBackoffMaxMs: 1_200 }), {
        logger: silent,
        timings: FAST,
      });
      t.running.push(worker);
      await untilCommitted(t.emulator, destination, 30_000);

      const runs = runsIn(runsFile);
      const gap = (id: string | undefined) => {
        const [a, b] = runs.filter((r) => r.eventId === id).map((r) => r.atMs) as [number, number];
        return b - a;
      };
      expect(gap(asksLittle?.id)).toBeGreaterThanOrEqual(700);
      expect(gap(asksLittle?.id)).toBeLessThan(1_200);
      expect(gap(asksMuch?.id)).toBeGreaterThanOrEqual(1_200);
      expect(gap(asksMuch?.id)).toBeLessThan(3_000);
      expect(deadLetters(join(dir, 'dead-letter.jsonl'))).toEqual([]);
    });
  });
}

describe('failure handling: waits and outages', () => {
  it('a wait longer than the lease: the lease is acked before its deadline, the event comes back and waits in its new lease, a few pulls in all', async () => {
    const dir = tempDir('long-wait');
    const runsFile = join(dir, 'runs.log');
    const destination = await createConsumer(t.emulator);
    appendBehave(
      t.emulator,
      1,
      () => ({ behaviour: 'retry-later', afterMs: 6_000, onlyOnAttempt: 1, runsFile }),
      () => 'waits',
    );
    // A 4 s lease (deadline 3 s after the pull): the 6 s wait outlives it.
    const worker = await startWorker(workerConfig(t.emulator, destination, dir, { visibilitySeconds: 4, retryBackoffMaxMs: 10_000 }), {
      logger: silent,
      timings: FAST,
    });
    t.running.push(worker);
    const pulled = pulledLeases(worker);
    const acks = ackStatuses(worker);
    await untilCommitted(t.emulator, destination, 30_000);

    const [first, second] = runsIn(runsFile);
    expect([first?.attempt, second?.attempt]).toEqual([1, 2]);
    expect((second?.atMs ?? 0) - (first?.atMs ?? 0)).toBeGreaterThanOrEqual(6_000);
    // No tight loop: the first lease, its redelivery right after the failure, one more per lease
    // deadline (3 s) over the 6 s wait, the one that runs it, and one for a deadline and the retry
    // time falling together on a slow machine.
    expect(pulled.length).toBeLessThanOrEqual(6);
    expect(acks.filter((status) => status === 'requeued').length).toBeLessThanOrEqual(5);
    // The platform commits before the worker hears the answer: wait for the last ack's answer.
    await waitFor('the committing ack answered', () => acks.at(-1) === 'committed', 10_000);
  });

  for (const breaker of [true, false]) {
    it(`a dependency down for a while: ${breaker ? 'the breaker parks the events, nothing is dead-lettered, and it closes once a probe succeeds' : 'without the breaker, events that keep failing are dead-lettered (what the breaker prevents)'}`, async () => {
      const dir = tempDir(`outage-${breaker}`);
      const record = join(dir, 'effects.log');
      const downFile = join(dir, 'down');
      const destination = await createConsumer(t.emulator);
      writeFileSync(downFile, '');
      const events = appendBehave(
        t.emulator,
        200,
        () => ({ behaviour: 'outage', downFile, record }),
        (i) => `s-${i % 20}`,
      );
      const config = workerConfig(t.emulator, destination, dir, {
        maxAttempts: 3,
        retryBackoffMinMs: 50,
        retryBackoffMaxMs: 200,
        breaker,
        breakerWindow: 10,
        breakerFailureRatio: 0.5,
        breakerCooldownMs: 300,
      });
      const worker = await startWorker(config, { logger: silent, timings: FAST });
      t.running.push(worker);
      const changes: BreakerChange['state'][] = [];
      worker.events.on('breaker:state', (change) => changes.push(change.state));
      const failed: string[] = [];
      worker.events.on('run:done', (e) => e.outcome === 'failed' && failed.push(e.event.id));

      await waitFor('runs failing', () => failed.length >= 10);
      if (breaker) {
        await waitFor('the breaker open', () => changes.includes('open'));
        const text = await (await fetch(`${worker.metricsUrl}/metrics`)).text();
        expect(metric(text, 'durable_worker_breaker_state', { handler: 'behave' })).toBeGreaterThanOrEqual(1);
        // The dependency is down, not the pod: a restart would not help.
        expect((await fetch(`${worker.metricsUrl}/readyz`)).status).toBe(200);
      }
      // The outage lasts until the breaker has re-opened after three failed probes (about a second),
      // or, without one, until events were dead-lettered for it.
      if (breaker) await waitFor('three failed probes', () => changes.filter((state) => state === 'open').length >= 4, 10_000);
      else await waitFor('a dead letter', () => deadLetters(join(dir, 'dead-letter.jsonl')).length > 0, 10_000);
      rmSync(downFile);
      await untilCommitted(t.emulator, destination, 30_000);

      const dead = deadLetters(join(dir, 'dead-letter.jsonl'));
      if (!breaker) {
        expect(dead.length).toBeGreaterThan(0);
        return;
      }
      expect(dead).toEqual([]);
      expect(new Set(records(record).map((e) => e.eventId)).size).toBe(events.length);
      expect(changes.at(-1)).toBe('closed');
      // While open, its events waited: the probes (one per cool-down) and the runs before it opened are all that failed.
      expect(failed.length).toBeLessThan(40);
      const text = await (await fetch(`${worker.metricsUrl}/metrics`)).text();
      expect(metric(text, 'durable_worker_breaker_state', { handler: 'behave' })).toBe(0);
      expect(consumerState(t.emulator, destination).committed).toBe(consumerState(t.emulator, destination).head);
    });
  }
});
