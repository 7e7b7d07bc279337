import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { poolSize } from '../../src/dispatch/thread-pool.js';
import { startWorker } from '../../src/worker/start.js';
import { startedRuns } from '../fixtures/spans.js';
import {
  appendBehave,
  consumerState,
  createConsumer,
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
 * Chained runs over real HTTP (`--isolation thread`): a subject's next event is handed to the thread
 * running the one before it, which starts it the moment that one ends ok, without a round trip
 * through the main thread (docs/architecture.md, "Processes and threads"). What must hold: it does start
 * there; it never starts after a failure, a crash, or a drain of the process; subject order and
 * exactly-once effects stay as without chaining.
 */
const t = emulatorForFile();

/** Successful runs' event ids per subject, in the order they were recorded. */
function idsBySubject(record: string): Map<string, string[]> {
  const by = new Map<string, string[]>();
  for (const line of records(record)) by.set(line.subject, [...(by.get(line.subject) ?? []), line.eventId]);
  return by;
}

describe('chained runs (--isolation thread)', () => {
  it("starts a subject's next event in the thread while the main thread's event loop is blocked", async () => {
    const dir = tempDir('chain-blocked');
    const startedFile = join(dir, 'started.log');
    const spans = join(dir, 'spans.log');
    const destination = await createConsumer(t.emulator);
    const [, second] = appendBehave(
      t.emulator,
      2,
      (i) => (i === 0 ? { behaviour: 'sleep', sleepMs: 50, startedFile } : { behaviour: 'sleep-timed', sleepMs: 1, record: spans }),
      () => 'entry-1',
    );
    const worker = await startWorker(workerConfig(t.emulator, destination, dir, { isolation: 'thread', exitWhenIdle: true }), {
      logger: silent,
      timings: FAST,
    });
    t.running.push(worker);
    await waitFor('the first event running', () => startedRuns(startedFile) === 1);

    // This is the worker's main thread: nothing it would do (an outcome, a start) happens until the loop is free.
    const blockedUntil = performance.timeOrigin + performance.now() + 1_500;
    while (performance.timeOrigin + performance.now() < blockedUntil) {
      // blocking on purpose
    }

    expect((await worker.done).reason).toBe('idle');
    const [, id, startMs] = readFileSync(spans, 'utf8').trim().split(' ');
    expect(id).toBe(second!.id);
    expect(Number(startMs)).toBeLessThan(blockedUntil);
  });

  for (const isolation of ['thread', 'none'] as const)
    it(`keeps subject order and exactly-once effects with failures on the way: a failed event stops the ones chained behind it until its retry (${isolation})`, async () => {
      const dir = tempDir('chain-order');
      const record = join(dir, 'effects.log');
      const destination = await createConsumer(t.emulator);
      // 160 events over 4 subjects in leases of 20 that overlap, some events failing their first attempt.
      const events = appendBehave(
        t.emulator,
        160,
        (i) => (i % 13 === 5 ? { behaviour: 'fail-until', untilAttempt: 2, record } : { behaviour: 'sleep', sleepMs: 1, record }),
        (i) => `entry-${i % 4}`,
      );
      const worker = await startWorker(
        workerConfig(t.emulator, destination, dir, { isolation, workers: 2, limit: 20, concurrency: 8, maxAttempts: 3, exitWhenIdle: true }),
        { logger: silent, timings: FAST },
      );
      t.running.push(worker);

      expect((await worker.done).reason).toBe('idle');
      await untilCommitted(t.emulator, destination);
      const lines = records(record);
      expect(lines.length).toBe(160);
      expect(new Set(lines.map((l) => l.eventId)).size).toBe(160);
      for (const [subject, ids] of idsBySubject(record)) {
        expect(ids, subject).toEqual(events.filter((e) => e.subject === subject).map((e) => e.id));
      }
    });

  it("spreads the subjects' chains over the threads: a CPU-bound handler's subjects do not all stay on the thread of the first message", async () => {
    const dir = tempDir('chain-spread');
    const record = join(dir, 'effects.log');
    const threadsFile = join(dir, 'threads.log');
    const destination = await createConsumer(t.emulator);
    // One lease of 40 events over 8 subjects, each blocking its thread for 20 ms: the 8 first events
    // start in one turn, the 32 others chain behind them, wherever those went.
    const subjects = 8;
    const events = appendBehave(
      t.emulator,
      40,
      () => ({ behaviour: 'block', sleepMs: 20, record, threadsFile }),
      (i) => `entry-${i % subjects}`,
    );
    const worker = await startWorker(
      workerConfig(t.emulator, destination, dir, { isolation: 'thread', limit: 40, concurrency: 8, maxInProgress: 8, exitWhenIdle: true }),
      { logger: silent, timings: FAST },
    );
    t.running.push(worker);

    expect((await worker.done).reason).toBe('idle');
    const runs = readFileSync(threadsFile, 'utf8')
      .trim()
      .split('\n')
      .map((line) => line.split(' '));
    expect(runs.length).toBe(40);
    // Every thread of the pool got subjects (a balanced split gives each the same number).
    const threads = new Set(runs.map(([thread]) => thread));
    expect(threads.size).toBe(Math.min(poolSize(8), subjects));
    expect(threads.has('0')).toBe(false);
    for (const [subject, ids] of idsBySubject(record)) {
      expect(ids, subject).toEqual(events.filter((e) => e.subject === subject).map((e) => e.id));
    }
  });

  it("a chained event's handler timeout counts from its start, not from when it was chained", async () => {
    const dir = tempDir('chain-timeout');
    const record = join(dir, 'effects.log');
    const destination = await createConsumer(t.emulator);
    // Eight events of one subject, 300 ms each, a 500 ms handler timeout: the last ones wait 1.8 s
    // and more for their turn, past their timeout plus the main thread's 1 s grace, were that
    // counted from when they were chained.
    const events = appendBehave(
      t.emulator,
      8,
      () => ({ behaviour: 'sleep', sleepMs: 300, record }),
      () => 'entry-1',
    );
    const worker = await startWorker(workerConfig(t.emulator, destination, dir, { isolation: 'thread', handlerTimeoutMs: 500, exitWhenIdle: true }), {
      logger: silent,
      timings: FAST,
    });
    t.running.push(worker);

    expect((await worker.done).reason).toBe('idle');
    const lines = records(record);
    expect(lines.map((l) => l.eventId)).toEqual(events.map((e) => e.id));
    expect(lines.every((l) => l.attempt === 1)).toBe(true);
  });

  it('a thread that exits under an event leaves the event chained behind it unstarted: both are retried, in order', async () => {
    const dir = tempDir('chain-exit');
    const record = join(dir, 'effects.log');
    const destination = await createConsumer(t.emulator);
    const events = appendBehave(
      t.emulator,
      6,
      (i) => (i === 0 ? { behaviour: 'exit-after-sleep', sleepMs: 20, onlyOnAttempt: 1, record } : { record }),
      (i) => (i < 3 ? 'entry-a' : `entry-${i}`),
    );
    const worker = await startWorker(workerConfig(t.emulator, destination, dir, { isolation: 'thread', maxAttempts: 3, exitWhenIdle: true }), {
      logger: silent,
      timings: FAST,
    });
    t.running.push(worker);

    expect((await worker.done).reason).toBe('idle');
    await untilCommitted(t.emulator, destination);
    expect(idsBySubject(record).get('entry-a')).toEqual(events.slice(0, 3).map((e) => e.id));
    expect(records(record).find((l) => l.eventId === events[0]!.id)?.attempt).toBe(2);
    expect(records(record).length).toBe(6);
  });

  it('a drain never starts a chained event: it is requeued at once with the other unstarted ones', async () => {
    const dir = tempDir('chain-drain');
    const record = join(dir, 'effects.log');
    const gateFile = join(dir, 'gate');
    const startedFile = join(dir, 'started.log');
    const destination = await createConsumer(t.emulator);
    // Five subjects of two events: the first of each a gate, the second chained on it.
    const events = appendBehave(
      t.emulator,
      10,
      (i) => (i < 5 ? { behaviour: 'gate', gateFile, startedFile, record } : { record }),
      (i) => `entry-${i % 5}`,
    );
    // One store for both processes: the second finds the gates done.
    const idempotencyUrl = `sqlite:${join(dir, 'idempotency.sqlite')}`;
    const worker = await startWorker(
      workerConfig(t.emulator, destination, dir, {
        isolation: 'thread',
        idempotencyUrl,
        idempotencyPrefix: 'chain-drain',
        limit: 10,
        concurrency: 8,
        visibilitySeconds: 60,
        shutdownTimeoutSeconds: 20,
      }),
      { logger: silent, timings: FAST },
    );
    t.running.push(worker);
    await waitFor('five gates running', () => startedRuns(startedFile) === 5);

    const closed = worker.close();
    // The gates finish ok after the drain began: what was chained on them must not start.
    writeFileSync(gateFile, '');
    await closed;
    expect(new Set(records(record).map((l) => l.eventId))).toEqual(new Set(events.slice(0, 5).map((e) => e.id)));
    const state = consumerState(t.emulator, destination);
    expect(state.leased).toBe(0);
    expect(state.pendingRedelivery).toBe(10);

    const second = await startWorker(
      workerConfig(t.emulator, destination, dir, { isolation: 'thread', idempotencyUrl, idempotencyPrefix: 'chain-drain', exitWhenIdle: true }),
      { logger: silent, timings: FAST },
    );
    t.running.push(second);
    expect((await second.done).reason).toBe('idle');
    await untilCommitted(t.emulator, destination);
    for (const [subject, ids] of idsBySubject(record)) expect(ids, subject).toEqual(events.filter((e) => e.subject === subject).map((e) => e.id));
  });
});
