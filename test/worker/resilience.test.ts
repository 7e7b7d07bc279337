import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.js';
import type { EventOutcome } from '../../src/observability/worker-events.js';
import { startWorker } from '../../src/worker/start.js';
import type { RunningWorker } from '../../src/worker/running-worker.js';
import { appendBehave, consumerState, createConsumer, deadLetters, emulatorForFile, FAST, records, silent, tempDir, waitFor, workerConfig } from './harness.js';

const t = emulatorForFile();

function countOutcomes(worker: RunningWorker): Record<EventOutcome | 'stale', number> {
  const counts = { ok: 0, failed: 0, duplicate: 0, dead_lettered: 0, stale: 0 };
  worker.events.on('run:done', (e) => void counts[e.outcome]++);
  worker.events.on('ack:done', (e) => void (e.status === 'stale' && counts.stale++));
  return counts;
}

describe('worker resilience (real emulator, real threads, real files)', () => {
  it('10,000 events with 4 workers: every effect exactly once, cursor at head, no stale ack', async () => {
    const dir = tempDir('10k');
    const record = join(dir, 'effects.log');
    const destination = await createConsumer(t.emulator);
    appendBehave(
      t.emulator,
      10_000,
      () => ({ record }),
      (i) => `s-${i % 500}`,
    );
    const worker = await startWorker(
      workerConfig(t.emulator, destination, dir, { isolation: 'thread', workers: 4, limit: 100, concurrency: 16, exitWhenIdle: true, visibilitySeconds: 30 }),
      { logger: silent, timings: FAST },
    );
    t.running.push(worker);
    const counts = countOutcomes(worker);
    expect(await worker.done).toEqual({ reason: 'idle' });
    const lines = records(record);
    expect(lines.length).toBe(10_000);
    expect(new Set(lines.map((l) => l.eventId)).size).toBe(10_000);
    expect(counts).toMatchObject({ ok: 10_000, failed: 0, stale: 0 });
    const state = consumerState(t.emulator, destination);
    expect(state.committed).toBe(state.head);
    expect(state.leased).toBe(0);
  }, 120_000);

  it('a handler that hangs fails at its timeout and the worker goes on', async () => {
    const dir = tempDir('hang');
    const record = join(dir, 'effects.log');
    const destination = await createConsumer(t.emulator);
    const [hung] = appendBehave(
      t.emulator,
      1,
      () => ({ sleepMs: 600_000 }),
      () => 'hang',
      'timeout.hang',
    );
    appendBehave(t.emulator, 20, () => ({ record }));
    const worker = await startWorker(workerConfig(t.emulator, destination, dir, { isolation: 'thread', exitWhenIdle: true, maxAttempts: 2 }), {
      logger: silent,
      timings: FAST,
    });
    t.running.push(worker);
    const failures: string[] = [];
    worker.events.on('run:done', (e) => (e.outcome === 'failed' || e.outcome === 'dead_lettered') && failures.push(`${e.outcome}:${e.error?.code}`));
    expect((await worker.done).reason).toBe('idle');
    expect(failures).toEqual(['failed:DW_ERR_HANDLER_TIMEOUT', 'dead_lettered:DW_ERR_HANDLER_TIMEOUT']);
    expect(deadLetters(join(dir, 'dead-letter.jsonl')).map((d) => [d.event.id, d.handler])).toEqual([[hung?.id, 'short-timeout']]);
    expect(records(record).length).toBe(20);
  });

  it('a handler that exits its thread fails, the worker goes on, the retry succeeds', async () => {
    const dir = tempDir('exit');
    const record = join(dir, 'effects.log');
    const destination = await createConsumer(t.emulator);
    const [exiting] = appendBehave(
      t.emulator,
      1,
      () => ({ behaviour: 'exit', onlyOnAttempt: 1, record }),
      () => 'exit',
    );
    appendBehave(t.emulator, 20, () => ({ record }));
    const worker = await startWorker(workerConfig(t.emulator, destination, dir, { isolation: 'thread', exitWhenIdle: true }), {
      logger: silent,
      timings: FAST,
    });
    t.running.push(worker);
    const crashes: string[] = [];
    worker.events.on('run:done', (e) => e.error?.code === 'DW_ERR_HANDLER_CRASH' && crashes.push(e.event.id));
    expect((await worker.done).reason).toBe('idle');
    expect(crashes).toContain(exiting?.id);
    const lines = records(record);
    expect(new Set(lines.map((l) => l.eventId)).size).toBe(21);
    expect(lines.find((l) => l.eventId === exiting?.id)?.attempt).toBe(2);
    const state = consumerState(t.emulator, destination);
    expect(state.committed).toBe(state.head);
  });

  it('a handler slower than the lease: acked failed before expiry, retried, nothing lost', async () => {
    const dir = tempDir('slow');
    const record = join(dir, 'effects.log');
    const destination = await createConsumer(t.emulator);
    appendBehave(t.emulator, 5, () => ({ behaviour: 'sleep-ignoring-signal', sleepMs: 2_500, onlyOnAttempt: 1, record }));
    const worker = await startWorker(workerConfig(t.emulator, destination, dir, { isolation: 'none', exitWhenIdle: true, visibilitySeconds: 2 }), {
      logger: silent,
      timings: FAST,
    });
    t.running.push(worker);
    const counts = countOutcomes(worker);
    const nearDeadline: number[] = [];
    worker.events.on('lease:near-deadline', (e) => nearDeadline.push(e.usedFraction));
    expect((await worker.done).reason).toBe('idle');
    expect(counts).toMatchObject({ failed: 5, stale: 0 });
    const lines = records(record);
    // Every event took effect on its retry (the late first runs may add their effect too: at-least-once).
    expect(new Set(lines.filter((l) => l.attempt === 2).map((l) => l.eventId)).size).toBe(5);
    expect(nearDeadline.length).toBeGreaterThan(0);
    const state = consumerState(t.emulator, destination);
    expect(state.committed).toBe(state.head);
  });

  it('an ack left unanswered is given up at the lease expiry; the batch comes back and later acks commit', async () => {
    const dir = tempDir('ack-hang');
    const record = join(dir, 'effects.log');
    const destination = await createConsumer(t.emulator);
    appendBehave(t.emulator, 10, () => ({ record }));
    t.emulator.faults.set({ latencyMs: 60_000, latencyRoutes: ['ack'] });
    const worker = await startWorker(workerConfig(t.emulator, destination, dir, { isolation: 'none', exitWhenIdle: true, visibilitySeconds: 2 }), {
      logger: silent,
      timings: FAST,
    });
    t.running.push(worker);
    const counts = countOutcomes(worker);
    const acks: string[] = [];
    worker.events.on('ack:done', (e) => {
      acks.push(e.status);
      // The first ack gave up: from now on the emulator answers at once.
      if (e.status === 'error') t.emulator.faults.clear();
    });
    // Given up at the lease expiry, not a minute later when the answer would come: the worker goes idle
    // within the test's timeout.
    expect((await worker.done).reason).toBe('idle');
    expect(acks[0]).toBe('error');
    expect(acks.at(-1)).toBe('committed');
    // The redelivered batch found its done marks: every effect ran once.
    expect(new Set(records(record).map((l) => l.eventId)).size).toBe(10);
    expect(records(record)).toHaveLength(10);
    expect(counts).toMatchObject({ ok: 10, duplicate: 10, stale: 0 });
    const state = consumerState(t.emulator, destination);
    expect(state.committed).toBe(state.head);
  });

  it('survives 5xx and dropped connections on pull and ack with every effect exactly once', async () => {
    const dir = tempDir('faults');
    const record = join(dir, 'effects.log');
    const destination = await createConsumer(t.emulator);
    appendBehave(
      t.emulator,
      600,
      () => ({ record }),
      (i) => `s-${i % 50}`,
    );
    t.emulator.faults.set({ seed: 7, errorRate: 0.15, dropRate: 0.05, routes: ['pull', 'ack'] });
    const worker = await startWorker(workerConfig(t.emulator, destination, dir, { isolation: 'none', workers: 2, limit: 25, exitWhenIdle: true }), {
      logger: silent,
      timings: FAST,
    });
    t.running.push(worker);
    const pulls: string[] = [];
    worker.events.on('pull:done', (e) => pulls.push(e.status));
    expect((await worker.done).reason).toBe('idle');
    expect(pulls.some((s) => s === '5xx' || s === 'error')).toBe(true);
    const lines = records(record);
    expect(new Set(lines.map((l) => l.eventId)).size).toBe(600);
    // A batch whose ack was lost is redelivered; its done marks turn the rerun into duplicates.
    expect(lines.length).toBe(600);
    const state = consumerState(t.emulator, destination);
    expect(state.committed).toBe(state.head);
  }, 60_000);

  it('close() mid-run releases every lease; a restart with the same SQLite store finishes with nothing lost', async () => {
    const dir = tempDir('restart');
    const record = join(dir, 'effects.log');
    const destination = await createConsumer(t.emulator);
    appendBehave(
      t.emulator,
      1_500,
      () => ({ behaviour: 'sleep', sleepMs: 3, record }),
      (i) => `s-${i % 40}`,
    );
    const config = workerConfig(t.emulator, destination, dir, {
      isolation: 'thread',
      workers: 2,
      limit: 50,
      concurrency: 8,
      idempotencyUrl: `sqlite:${join(dir, 'idempotency.sqlite')}`,
    });
    const first = await startWorker(config, { logger: silent, timings: FAST });
    await waitFor('some progress', () => records(record).length >= 200);
    await first.close();
    expect(await first.done).toEqual({ reason: 'closed' });
    const afterClose = consumerState(t.emulator, destination);
    expect(afterClose.leased).toBe(0);
    const doneBefore = records(record).length;
    expect(doneBefore).toBeLessThan(1_500);

    const second = await startWorker({ ...config, exitWhenIdle: true }, { logger: silent, timings: FAST });
    t.running.push(second);
    expect((await second.done).reason).toBe('idle');
    const lines = records(record);
    expect(new Set(lines.map((l) => l.eventId)).size).toBe(1_500);
    expect(lines.length).toBe(1_500);
    const state = consumerState(t.emulator, destination);
    expect(state.committed).toBe(state.head);
  }, 60_000);

  it('forced shutdown aborts handlers past --shutdown-timeout and requeues their batch at once', async () => {
    const dir = tempDir('force');
    const destination = await createConsumer(t.emulator);
    appendBehave(t.emulator, 4, () => ({ behaviour: 'sleep', sleepMs: 60_000 }));
    const worker = await startWorker(workerConfig(t.emulator, destination, dir, { isolation: 'thread', shutdownTimeoutSeconds: 0.3, visibilitySeconds: 120 }), {
      logger: silent,
      timings: FAST,
    });
    const acks: string[] = [];
    worker.events.on('ack:done', (e) => acks.push(`${e.sent}:${e.status}`));
    await waitFor('handlers running', () => consumerState(t.emulator, destination).leased === 4);
    // The handlers would sleep a minute, past the test's timeout: close() returns because it aborts them.
    await worker.close();
    expect(acks).toEqual(['failed:requeued']);
    expect(consumerState(t.emulator, destination)).toMatchObject({ leased: 0, pendingRedelivery: 4 });
    expect(deadLetters(join(dir, 'dead-letter.jsonl'))).toEqual([]);
  });

  it('a paused consumer: 409 waits, work resumes after resume', async () => {
    const dir = tempDir('paused');
    const record = join(dir, 'effects.log');
    const destination = await createConsumer(t.emulator);
    const client = createClient({ baseUrl: t.emulator.url, tenant: 'dev-tenant', clientId: 'dev-client', clientSecret: 'dev-secret' });
    try {
      await client.pause(destination);
      appendBehave(t.emulator, 10, () => ({ record }));
      const worker = await startWorker(workerConfig(t.emulator, destination, dir, { exitWhenIdle: true }), { logger: silent, timings: FAST });
      t.running.push(worker);
      const pulls: string[] = [];
      worker.events.on('pull:done', (e) => pulls.push(e.status));
      await waitFor('two paused pulls', () => pulls.filter((s) => s === '409').length >= 2);
      expect(records(record)).toEqual([]);
      expect(worker.ready).toBe(true);
      await client.resume(destination);
      expect((await worker.done).reason).toBe('idle');
      expect(records(record).length).toBe(10);
    } finally {
      await client.close();
    }
  });

  it('configuration errors make the worker unready with the cause; it keeps retrying', async () => {
    const dir = tempDir('config');
    /** Starts a worker on `destination` and follows its readiness and pull answers. */
    const watched = async (destination: string) => {
      const worker = await startWorker(workerConfig(t.emulator, destination, dir), { logger: silent, timings: FAST });
      t.running.push(worker);
      const changes: { ready: boolean; reason?: string }[] = [];
      worker.events.on('ready:changed', (e) => changes.push(e));
      const statuses: string[] = [];
      worker.events.on('pull:done', (e) => statuses.push(e.status));
      return { worker, changes, statuses };
    };

    const missing = await watched('no-such-destination');
    await waitFor('two 404 pulls', () => missing.statuses.filter((s) => s === '4xx').length >= 2);
    expect(missing.worker.ready).toBe(false);
    expect(missing.changes.at(-1)).toEqual({ ready: false, reason: expect.stringContaining('pull answered 404') });
    expect((await fetch(`${missing.worker.metricsUrl}/readyz`)).status).toBe(503);

    const webhook = await watched('dev-webhook');
    await waitFor('unready on 400', () => webhook.changes.at(-1)?.reason?.includes('pull answered 400') === true);
    expect(webhook.worker.ready).toBe(false);
    expect(webhook.statuses).toContain('4xx');

    const good = await watched(await createConsumer(t.emulator));
    await waitFor('ready', () => good.worker.ready);
    expect(good.changes).toEqual([{ ready: true }]);
    expect((await fetch(`${good.worker.metricsUrl}/readyz`)).status).toBe(200);
  });

  it('refuses to start with a broken handler module, naming the file', async () => {
    const dir = tempDir('broken');
    const broken = fileURLToPath(new URL('../fixtures/handlers-syntax-error', import.meta.url));
    await expect(
      startWorker(workerConfig(t.emulator, 'dev-consumer', dir, { handlersDir: broken, isolation: 'thread' }), { logger: silent }),
    ).rejects.toMatchObject({
      code: 'DW_ERR_HANDLER_LOAD',
      message: expect.stringContaining('broken.js'),
    });
  });
});
