import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startWorker } from '../../src/worker/start.js';
import type { RunningWorker } from '../../src/worker/running-worker.js';
import { metric } from '../fixtures/scrape.js';
import { startedRuns } from '../fixtures/spans.js';
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
 * How handler runs end, in both isolations, seen from the worker's edges: the outcome of each event
 * (`run:done`), what the handlers did (effects and started files), what the emulator holds and what
 * the dead-letter sink and /metrics say. Whatever dispatches the runs inside must keep these.
 */
const t = emulatorForFile();

interface Failure {
  eventId: string;
  code: string | undefined;
  message: string | undefined;
}

function failuresOf(worker: RunningWorker): Failure[] {
  const failures: Failure[] = [];
  worker.events.on('run:done', (e) => e.outcome === 'failed' && failures.push({ eventId: e.event.id, code: e.error?.code, message: e.error?.message }));
  return failures;
}

for (const isolation of ['none', 'thread'] as const) {
  describe(`handler runs (isolation ${isolation})`, () => {
    it('a handler past its own timeoutMs fails with that timeout, is dead-lettered after --max-attempts, and the others run', async () => {
      const dir = tempDir('own-timeout');
      const record = join(dir, 'effects.log');
      const destination = await createConsumer(t.emulator);
      const [slow] = appendBehave(
        t.emulator,
        1,
        () => ({ sleepMs: 60_000 }),
        () => 'slow',
        'timeout.slow',
      );
      appendBehave(t.emulator, 5, () => ({ record }));
      const worker = await startWorker(workerConfig(t.emulator, destination, dir, { isolation, maxAttempts: 2, visibilitySeconds: 600 }), {
        logger: silent,
        timings: FAST,
      });
      t.running.push(worker);
      const failures = failuresOf(worker);
      await untilCommitted(t.emulator, destination, 30_000);
      expect(failures).toEqual([{ eventId: slow?.id, code: 'DW_ERR_HANDLER_TIMEOUT', message: 'handler short-timeout timed out after 300 ms' }]);
      expect(deadLetters(join(dir, 'dead-letter.jsonl')).map((d) => [d.event.id, d.handler, d.reason, d.error.code])).toEqual([
        [slow?.id, 'short-timeout', 'max-attempts', 'DW_ERR_HANDLER_TIMEOUT'],
      ]);
      expect(records(record)).toHaveLength(5);
    });

    it('a handler that never settles fails at the batch deadline, before the lease expires, and its retry succeeds', async () => {
      const dir = tempDir('never-settles');
      const record = join(dir, 'effects.log');
      const destination = await createConsumer(t.emulator);
      const [hung] = appendBehave(t.emulator, 1, () => ({ behaviour: 'hang', onlyOnAttempt: 1, record }));
      const worker = await startWorker(workerConfig(t.emulator, destination, dir, { isolation, visibilitySeconds: 2 }), { logger: silent, timings: FAST });
      t.running.push(worker);
      const failures = failuresOf(worker);
      const acks: string[] = [];
      worker.events.on('ack:done', (e) => acks.push(`${e.sent}:${e.status}`));
      await untilCommitted(t.emulator, destination);
      expect(failures).toEqual([{ eventId: hung?.id, code: 'DW_ERR_HANDLER_TIMEOUT', message: expect.stringContaining('lease deadline') }]);
      // Acked failed while the lease was still ours (not stale), then committed on the retry.
      await waitFor('the answer to the second ack', () => acks.length >= 2);
      expect(acks).toEqual(['failed:requeued', 'ok:committed']);
      expect(records(record).map((r) => r.attempt)).toEqual([2]);
    });

    it('at the batch deadline the running events fail and the ones waiting for a slot never start; the retry runs them all', async () => {
      const dir = tempDir('deadline-cut');
      const record = join(dir, 'effects.log');
      const startedFile = join(dir, 'started.log');
      const destination = await createConsumer(t.emulator);
      appendBehave(t.emulator, 5, () => ({ behaviour: 'sleep', sleepMs: 60_000, onlyOnDelivery: 1, startedFile, record }));
      const worker = await startWorker(workerConfig(t.emulator, destination, dir, { isolation, visibilitySeconds: 2, concurrency: 2 }), {
        logger: silent,
        timings: FAST,
      });
      t.running.push(worker);
      const failures = failuresOf(worker);
      await untilCommitted(t.emulator, destination);
      // Only the first attempt sleeps (and writes the started file): two slots, two runs.
      expect(startedRuns(startedFile)).toBe(2);
      expect(failures.map((f) => f.code)).toEqual(['DW_ERR_HANDLER_TIMEOUT', 'DW_ERR_HANDLER_TIMEOUT']);
      // The handler's attempt: the two cut runs counted as failures; the three never started had none.
      expect(
        records(record)
          .map((r) => r.attempt)
          .sort(),
      ).toEqual([1, 1, 1, 2, 2]);
    });

    it('a drain lets the running events finish and starts no other; the batch is handed back at once', async () => {
      const dir = tempDir('drain');
      const record = join(dir, 'effects.log');
      const startedFile = join(dir, 'started.log');
      const gateFile = join(dir, 'gate');
      const destination = await createConsumer(t.emulator);
      const events = appendBehave(t.emulator, 6, () => ({ behaviour: 'gate', gateFile, startedFile, record }));
      const worker = await startWorker(workerConfig(t.emulator, destination, dir, { isolation, concurrency: 2, shutdownTimeoutSeconds: 20 }), {
        logger: silent,
        timings: FAST,
      });
      const acks: string[] = [];
      worker.events.on('ack:done', (e) => acks.push(`${e.sent}:${e.status}`));
      await waitFor('two runs going', () => startedRuns(startedFile) === 2);
      const closing = worker.close();
      writeFileSync(gateFile, '');
      await closing;
      expect(
        records(record)
          .map((r) => r.eventId)
          .sort(),
      ).toEqual(
        events
          .slice(0, 2)
          .map((e) => e.id)
          .sort(),
      );
      expect(startedRuns(startedFile)).toBe(2);
      expect(acks).toEqual(['failed:requeued']);
      expect(consumerState(t.emulator, destination)).toMatchObject({ leased: 0, pendingRedelivery: 6 });
    });

    it('/metrics counts the events in progress: the concurrency while they run, zero after', async () => {
      const dir = tempDir('in-flight');
      const record = join(dir, 'effects.log');
      const startedFile = join(dir, 'started.log');
      const gateFile = join(dir, 'gate');
      const destination = await createConsumer(t.emulator);
      appendBehave(t.emulator, 10, () => ({ behaviour: 'gate', gateFile, startedFile, record }));
      const worker = await startWorker(workerConfig(t.emulator, destination, dir, { isolation, concurrency: 4 }), { logger: silent, timings: FAST });
      t.running.push(worker);
      await waitFor('four runs going', () => startedRuns(startedFile) === 4);
      await waitFor('the gauge at four', async () => (await metric(worker.metricsUrl, 'durable_worker_in_flight_events')) === 4);
      writeFileSync(gateFile, '');
      await untilCommitted(t.emulator, destination);
      await waitFor('the gauge back at zero', async () => (await metric(worker.metricsUrl, 'durable_worker_in_flight_events')) === 0);
      expect(records(record)).toHaveLength(10);
    });
  });
}

describe('handler runs (isolation thread)', () => {
  it('a handler that exits its thread fails its own event only: the events that ran beside it are ok, and its retry succeeds', async () => {
    const dir = tempDir('thread-exit');
    const record = join(dir, 'effects.log');
    const destination = await createConsumer(t.emulator);
    const [exiting] = appendBehave(
      t.emulator,
      1,
      () => ({ behaviour: 'exit-after-sleep', sleepMs: 300, onlyOnAttempt: 1, record }),
      () => 'exit',
    );
    const others = appendBehave(
      t.emulator,
      6,
      () => ({ record }),
      (i) => `other-${i}`,
    );
    const worker = await startWorker(workerConfig(t.emulator, destination, dir, { isolation: 'thread', concurrency: 4 }), { logger: silent, timings: FAST });
    t.running.push(worker);
    const failures = failuresOf(worker);
    await untilCommitted(t.emulator, destination, 30_000);
    expect(failures).toEqual([{ eventId: exiting?.id, code: 'DW_ERR_HANDLER_CRASH', message: expect.stringContaining('exited with code') }]);
    const effects = records(record);
    expect(
      effects
        .filter((e) => e.eventId !== exiting?.id)
        .map((e) => [e.eventId, e.attempt])
        .sort(),
    ).toEqual(others.map((e) => [e.id, 1]).sort());
    expect(effects.find((e) => e.eventId === exiting?.id)?.attempt).toBe(2);
  });
});
