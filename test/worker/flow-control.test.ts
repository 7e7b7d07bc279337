import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
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
 * Flow control over real HTTP (issue 21): one process holds several leases at once, so a lease's
 * straggler does not hold up the next lease's events; events of one subject still run in stream
 * order across the leases; the process stays inside the consumer's 1,000-event window by itself;
 * a drain with several leases in hand leaves none held. A straggler here is a `gate` run: it ends
 * when the test creates its file, so what runs meanwhile does not depend on the machine's speed.
 */
const t = emulatorForFile();

/** Lines of `record` by event id (a successful run writes one). */
function ranIds(record: string): Set<string> {
  return new Set(records(record).map((line) => line.eventId));
}

describe('flow control', () => {
  it("leases overlap: a held lease's straggler does not stop the next leases' events from starting", async () => {
    const dir = tempDir('overlap');
    const record = join(dir, 'effects.log');
    const gateFile = join(dir, 'gate');
    const destination = await createConsumer(t.emulator);
    // Four leases of five: the first event of the first lease waits for the gate; the others are quick.
    const events = appendBehave(t.emulator, 20, (i) => (i === 0 ? { behaviour: 'gate', gateFile, record } : { record }));
    const worker = await startWorker(workerConfig(t.emulator, destination, dir, { workers: 1, limit: 5, visibilitySeconds: 60, exitWhenIdle: true }), {
      logger: silent,
      timings: FAST,
    });
    t.running.push(worker);

    // With --workers 1 one workerId would wait for the straggler; the process pulls past it instead.
    await waitFor('the 19 events behind the straggler ran', () => ranIds(record).size === 19);
    const held = consumerState(t.emulator, destination);
    expect(held.leased).toBeGreaterThanOrEqual(5); // the straggler's lease is still held...
    expect(held.committed).toBeNull(); // ...so the cursor has not moved past it
    expect(ranIds(record).has(events[0]!.id)).toBe(false);

    writeFileSync(gateFile, '');
    expect((await worker.done).reason).toBe('idle');
    expect(ranIds(record).size).toBe(20);
    const state = consumerState(t.emulator, destination);
    expect(state.committed).toBe(state.head);
  });

  // With threads, the later event is chained on the earlier one where it runs (chained-runs.test.ts).
  for (const [failing, isolation] of [
    [false, 'none'],
    [true, 'none'],
    [false, 'thread'],
    [true, 'thread'],
  ] as const) {
    it(`subject order across two leases of one process: the later lease's event of a subject waits for the earlier one${failing ? ', and for its retry when it fails' : ''} (${isolation})`, async () => {
      const dir = tempDir('order-leases');
      const record = join(dir, 'effects.log');
      const gateFile = join(dir, 'gate');
      const destination = await createConsumer(t.emulator);
      // Two leases of five; events 0 and 5 share subject `a`, every other event has its own.
      const gate = failing ? { behaviour: 'gate', gateFile, failAfterGate: true, onlyOnAttempt: 1, record } : { behaviour: 'gate', gateFile, record };
      const events = appendBehave(
        t.emulator,
        10,
        (i) => (i === 0 ? gate : { record }),
        (i) => (i === 0 || i === 5 ? 'a' : `s-${i}`),
      );
      const worker = await startWorker(
        workerConfig(t.emulator, destination, dir, { isolation, workers: 1, limit: 5, visibilitySeconds: 60, maxAttempts: 3, exitWhenIdle: true }),
        { logger: silent, timings: FAST },
      );
      t.running.push(worker);

      // The second lease is in hand and its other events ran: only the event behind `a`'s first waits.
      await waitFor('every event but the two of subject a ran', () => ranIds(record).size === 8);
      expect(ranIds(record).has(events[5]!.id)).toBe(false);

      writeFileSync(gateFile, '');
      expect((await worker.done).reason).toBe('idle');
      const lines = records(record);
      expect(new Set(lines.map((l) => l.eventId)).size).toBe(10);
      const ofA = lines.filter((l) => l.subject === 'a');
      // Each ran once to success, the earlier first (after its retry when its first attempt failed).
      expect(ofA.map((l) => l.eventId)).toEqual([events[0]!.id, events[5]!.id]);
      if (failing) expect(ofA[0]!.attempt).toBe(2);
      const state = consumerState(t.emulator, destination);
      expect(state.committed).toBe(state.head);
    });
  }

  it('never more than the in-flight window: a budget above 1,000 events still gets no 429', async () => {
    const dir = tempDir('window');
    const record = join(dir, 'effects.log');
    const destination = await createConsumer(t.emulator);
    appendBehave(t.emulator, 4_000, () => ({ behaviour: 'sleep', sleepMs: 30, record }));
    // A budget of 2,000 running events and 32 leases of 100: only the consumer's window bounds the pulls.
    const worker = await startWorker(
      workerConfig(t.emulator, destination, dir, {
        workers: 4,
        limit: 100,
        concurrency: 500,
        maxInProgress: 2_000,
        maxLeases: 32,
        visibilitySeconds: 60,
        exitWhenIdle: true,
      }),
      { logger: silent, timings: FAST },
    );
    t.running.push(worker);
    const statuses = new Map<string, number>();
    let mostLeased = 0;
    worker.events.on('pull:done', (e) => statuses.set(e.status, (statuses.get(e.status) ?? 0) + 1));
    worker.events.on('lease:pulled', () => void (mostLeased = Math.max(mostLeased, consumerState(t.emulator, destination).leased)));

    expect((await worker.done).reason).toBe('idle');
    expect(statuses.get('429')).toBeUndefined();
    // The window was reached for, not merely never wanted: several leases of 100 were held at once.
    expect(mostLeased).toBeGreaterThan(500);
    expect(mostLeased).toBeLessThanOrEqual(1_000);
    expect(ranIds(record).size).toBe(4_000);
    const state = consumerState(t.emulator, destination);
    expect(state.committed).toBe(state.head);
  });

  it('a drain with several leases held leaves none held: unstarted events are requeued at once, running ones finish', async () => {
    const dir = tempDir('drain-leases');
    const record = join(dir, 'effects.log');
    const gateFile = join(dir, 'gate');
    const startedFile = join(dir, 'started.log');
    const destination = await createConsumer(t.emulator);
    // Leases of five, every event a gate: a budget of eight running events spans at least two leases.
    appendBehave(t.emulator, 15, () => ({ behaviour: 'gate', gateFile, startedFile, record }));
    const worker = await startWorker(
      workerConfig(t.emulator, destination, dir, { workers: 1, limit: 5, concurrency: 8, visibilitySeconds: 60, shutdownTimeoutSeconds: 20 }),
      { logger: silent, timings: FAST },
    );
    t.running.push(worker);
    await waitFor('eight gates running', () => startedRuns(startedFile) === 8);
    expect(consumerState(t.emulator, destination).leased).toBeGreaterThanOrEqual(10);

    const closed = worker.close();
    // Nothing more starts; the running gates may finish, then every lease is acked.
    writeFileSync(gateFile, '');
    await closed;
    const state = consumerState(t.emulator, destination);
    expect(state.leased).toBe(0);
    // The second lease's unstarted events (and any later lease's) came back at once, acked `failed`.
    expect(state.pendingRedelivery).toBeGreaterThanOrEqual(2);
    expect(ranIds(record).size).toBe(8);

    // A second process takes the requeued events at once (not after a lease expiry) and ends at the head.
    const second = await startWorker(workerConfig(t.emulator, destination, dir, { workers: 1, limit: 5, visibilitySeconds: 60, exitWhenIdle: true }), {
      logger: silent,
      timings: FAST,
    });
    t.running.push(second);
    expect((await second.done).reason).toBe('idle');
    await untilCommitted(t.emulator, destination);
    expect(ranIds(record).size).toBe(15);
  });
});
