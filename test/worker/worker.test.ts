import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { EventOutcome } from '../../src/observability/worker-events.js';
import { startWorker } from '../../src/worker/start.js';
import type { RunningWorker } from '../../src/worker/running-worker.js';
import { maxOverlap, spans } from '../fixtures/spans.js';
import { appendBehave, consumerState, createConsumer, deadLetters, emulatorForFile, FAST, records, silent, tempDir, waitFor, workerConfig } from './harness.js';

const t = emulatorForFile();

function countOutcomes(worker: RunningWorker): Record<EventOutcome, number> {
  const counts: Record<EventOutcome, number> = { ok: 0, failed: 0, duplicate: 0, dead_lettered: 0 };
  worker.events.on('run:done', (e) => void counts[e.outcome]++);
  return counts;
}

for (const isolation of ['none', 'thread'] as const) {
  describe(`worker against the emulator (isolation ${isolation})`, () => {
    it('runs every matching handler once per event, commits to the head, exits when idle', async () => {
      const dir = tempDir('basic');
      const record = join(dir, 'effects.log');
      const destination = await createConsumer(t.emulator);
      appendBehave(
        t.emulator,
        50,
        () => ({ behaviour: 'ok', record }),
        (i) => `s-${i % 7}`,
        'behave.multi',
      );
      const unrouted = appendBehave(
        t.emulator,
        5,
        () => ({ record }),
        (i) => `u-${i}`,
        'unrouted.type',
      );
      const worker = await startWorker(workerConfig(t.emulator, destination, dir, { isolation, exitWhenIdle: true }), { logger: silent, timings: FAST });
      t.running.push(worker);
      const counts = countOutcomes(worker);
      expect(await worker.done).toEqual({ reason: 'idle' });
      const lines = records(record);
      // behave.multi matches behave (behave.*) and nested/second: two effects per event.
      expect(lines.length).toBe(100);
      expect(new Set(lines.map((l) => `${l.handler}:${l.eventId}`)).size).toBe(100);
      expect(new Set(lines.map((l) => l.handler))).toEqual(new Set(['behave', 'nested/second']));
      expect(counts.ok).toBe(105);
      const state = consumerState(t.emulator, destination);
      // Events no handler wants are committed too: the cursor is past the last of them.
      expect(state.committed).toBe(unrouted.at(-1)?.sequence);
      expect(state.leased).toBe(0);
    });

    it('an run:done listener that throws changes no outcome: every event ok on its first attempt, nothing redelivered', async () => {
      const dir = tempDir('listener');
      const record = join(dir, 'effects.log');
      const destination = await createConsumer(t.emulator);
      appendBehave(t.emulator, 5, () => ({ behaviour: 'ok', record }));
      const worker = await startWorker(workerConfig(t.emulator, destination, dir, { isolation, exitWhenIdle: true }), { logger: silent, timings: FAST });
      t.running.push(worker);
      const counts = countOutcomes(worker);
      let thrown = 0;
      worker.events.on('run:done', (e) => {
        if (e.outcome !== 'ok' || thrown > 0) return;
        thrown++;
        throw new Error('a listener bug');
      });
      expect((await worker.done).reason).toBe('idle');
      expect(thrown).toBe(1);
      expect(records(record).map((l) => l.attempt)).toEqual([1, 1, 1, 1, 1]);
      expect(counts).toEqual({ ok: 5, failed: 0, duplicate: 0, dead_lettered: 0 });
      const state = consumerState(t.emulator, destination);
      expect(state.committed).toBe(state.head);
    });

    it('retries a failing handler: failed first, then ok on the next attempt', async () => {
      const dir = tempDir('retry');
      const record = join(dir, 'effects.log');
      const destination = await createConsumer(t.emulator);
      appendBehave(t.emulator, 10, () => ({ behaviour: 'fail-until', untilAttempt: 2, record }));
      const worker = await startWorker(workerConfig(t.emulator, destination, dir, { isolation, exitWhenIdle: true }), { logger: silent, timings: FAST });
      t.running.push(worker);
      const counts = countOutcomes(worker);
      expect((await worker.done).reason).toBe('idle');
      const lines = records(record);
      expect(lines.length).toBe(10);
      expect(lines.every((l) => l.attempt === 2)).toBe(true);
      expect(counts.failed).toBe(10);
      expect(counts.ok).toBe(10);
      expect(deadLetters(join(dir, 'dead-letter.jsonl'))).toEqual([]);
    });

    it('dead-letters an always-failing event after maxAttempts and a PermanentError at once', async () => {
      const dir = tempDir('dlq');
      const record = join(dir, 'effects.log');
      const destination = await createConsumer(t.emulator);
      const [failing] = appendBehave(
        t.emulator,
        1,
        () => ({ behaviour: 'fail' }),
        () => 'bad',
      );
      const [permanent] = appendBehave(
        t.emulator,
        1,
        () => ({ behaviour: 'permanent' }),
        () => 'perm',
      );
      appendBehave(
        t.emulator,
        3,
        () => ({ behaviour: 'ok', record }),
        (i) => `good-${i}`,
      );
      const config = workerConfig(t.emulator, destination, dir, { isolation, exitWhenIdle: true, maxAttempts: 3 });
      const worker = await startWorker(config, { logger: silent, timings: FAST });
      t.running.push(worker);
      const counts = countOutcomes(worker);
      expect((await worker.done).reason).toBe('idle');
      const dead = deadLetters(join(dir, 'dead-letter.jsonl'));
      expect(dead.map((d) => [d.event.id, d.reason, d.attempt, d.handler]).sort()).toEqual(
        [
          [failing?.id, 'max-attempts', 3, 'behave'],
          [permanent?.id, 'permanent', 1, 'behave'],
        ].sort(),
      );
      const maxed = dead.find((d) => d.reason === 'max-attempts');
      expect(maxed?.error.message).toContain('always fails');
      expect(maxed?.error.stack).toContain('behave.ts');
      expect(maxed?.firstFailedAt).toBeDefined();
      // One of the process's workerIds (`<prefix>-<index>`, a pool larger than --workers: leases overlap).
      expect(maxed?.workerId).toMatch(new RegExp(`^${config.workerIdPrefix}-\\d+$`));
      expect(dead.find((d) => d.reason === 'permanent')?.error.code).toBe('DW_ERR_PERMANENT');
      expect(counts.dead_lettered).toBe(2);
      expect(records(record).length).toBe(3);
      const state = consumerState(t.emulator, destination);
      expect(state.committed).toBe(state.head);
    });

    it('never runs more than --concurrency events at once, however many the batch holds', async () => {
      const dir = tempDir('concurrency');
      const record = join(dir, 'effects.log');
      const destination = await createConsumer(t.emulator);
      // The first four runs wait for each other: --concurrency is used in full, however busy the machine.
      const startedFile = join(dir, 'started.log');
      appendBehave(t.emulator, 60, () => ({ behaviour: 'sleep-timed', sleepMs: 20, record, startedFile, meet: 4 }));
      const inFlight: number[] = [];
      const worker = await startWorker(workerConfig(t.emulator, destination, dir, { isolation, exitWhenIdle: true, limit: 60, concurrency: 4 }), {
        logger: silent,
        timings: FAST,
      });
      t.running.push(worker);
      worker.events.on('inflight:changed', (e) => inFlight.push(e.inFlight));
      expect((await worker.done).reason).toBe('idle');
      const runs = spans(record);
      expect(runs.length).toBe(60);
      expect(maxOverlap(runs)).toBe(4);
      expect(Math.max(...inFlight)).toBeLessThanOrEqual(4);
    });

    it('keeps events of one subject in stream order under concurrency', async () => {
      const dir = tempDir('order');
      const record = join(dir, 'effects.log');
      const destination = await createConsumer(t.emulator);
      // Random sleeps would reorder events if one subject's events ran side by side.
      appendBehave(
        t.emulator,
        120,
        (i) => ({ behaviour: 'sleep', sleepMs: (i * 7919) % 13, record }),
        (i) => `subject-${i % 4}`,
      );
      const worker = await startWorker(workerConfig(t.emulator, destination, dir, { isolation, exitWhenIdle: true, limit: 40, concurrency: 8 }), {
        logger: silent,
        timings: FAST,
      });
      t.running.push(worker);
      expect((await worker.done).reason).toBe('idle');
      const lines = records(record);
      expect(lines.length).toBe(120);
      for (let s = 0; s < 4; s++) {
        const sequences = lines.filter((l) => l.subject === `subject-${s}`).map((l) => Number(l.sequence));
        expect(sequences).toEqual([...sequences].sort((a, b) => a - b));
      }
    });
  });
}
