import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { withEmulator, type ObservedOutcome } from '../../src/testing/index.js';
import { tempDir } from './harness.js';

const BULK = fileURLToPath(new URL('../fixtures/batch-handlers', import.meta.url));
const ORDERED = fileURLToPath(new URL('../fixtures/ordered-batch', import.meta.url));

function callsIn<T>(file: string): T[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as T);
}

const entry = (id: string, name: string) => ({ id, properties: [{ id: 'name', value: name }] });
const outcomesOf = (outcomes: readonly ObservedOutcome[], subject: string) => outcomes.filter((o) => o.event.subject === subject).map((o) => o.outcome);

// Batch handlers over real HTTP against the emulator, in both isolation modes: the per-event
// bookkeeping (claims, done marks, dead letters, outcomes) is the worker's, per event.
describe.each(['none', 'thread'] as const)('batch handlers (--isolation %s)', (isolation) => {
  it('mixed per-event results: ok, retried, dead-lettered at max attempts, permanent; a redelivery skips the events already done', async () => {
    const calls = join(tempDir('batch-calls'), 'calls.jsonl');
    process.env.BATCH_CALLS = calls;
    await withEmulator({ handlers: BULK, worker: { isolation, maxAttempts: 3, visibility: 10, retryBackoffMin: '50ms' } }, async (env) => {
      await env.ingest('bulk', [entry('ok-1', 'fine'), entry('flaky-1', 'fail-once'), entry('broken-1', 'always-fail'), entry('poison-1', 'poison')]);
      await env.waitFor((seen) => outcomesOf(seen, 'broken-1').includes('dead_lettered') && outcomesOf(seen, 'flaky-1').includes('ok'));
      // Failed events retry in their lease (after the backoff): nothing is redelivered, nothing runs twice.
      expect(outcomesOf(env.outcomes, 'ok-1')).toEqual(['ok']);
      expect(outcomesOf(env.outcomes, 'flaky-1')).toEqual(['failed', 'ok']);
      expect(outcomesOf(env.outcomes, 'broken-1')).toEqual(['failed', 'failed', 'dead_lettered']);
      expect(outcomesOf(env.outcomes, 'poison-1')).toEqual(['dead_lettered']);
      expect(env.deadLetters.map((d) => [d.event.subject, d.handler, d.reason, d.attempt])).toEqual([
        ['poison-1', 'bulk', 'permanent', 1],
        ['broken-1', 'bulk', 'max-attempts', 3],
      ]);
      // The first call has every event; a retry hands over only the failed ones, each at its own attempt.
      const calls_ = callsIn<{ attempt: number; ids: string[] }>(calls);
      expect(calls_[0]).toEqual({ attempt: 1, ids: ['ok-1', 'flaky-1', 'broken-1', 'poison-1'] });
      const attemptsOf = (id: string) => calls_.filter((call) => call.ids.includes(id)).map((call) => call.attempt);
      expect([attemptsOf('ok-1'), attemptsOf('flaky-1'), attemptsOf('broken-1'), attemptsOf('poison-1')]).toEqual([[1], [1, 2], [1, 2, 3], [1]]);
      const metrics = await (await fetch(`${env.worker.metricsUrl}/metrics`)).text();
      expect(metrics).toMatch(/durable_worker_events_total\{[^}]*outcome="dead_lettered"[^}]*\} 2/);
      expect(metrics).toMatch(/durable_worker_events_total\{[^}]*outcome="ok"[^}]*\} 2/);
    });
  });

  it('an event that fails the schema is dead-lettered alone and never reaches handleBatch', async () => {
    const calls = join(tempDir('batch-calls'), 'calls.jsonl');
    process.env.BATCH_CALLS = calls;
    await withEmulator({ handlers: BULK, worker: { isolation } }, async (env) => {
      await env.ingest('bulk', [entry('good-1', 'fine'), entry('Bad-1', 'fine'), entry('good-2', 'fine')]);
      const settled = await env.waitForSettled(3);
      expect(settled.map((o) => [o.event.subject, o.outcome]).sort()).toEqual([
        ['Bad-1', 'dead_lettered'],
        ['good-1', 'ok'],
        ['good-2', 'ok'],
      ]);
      expect(env.deadLetters).toHaveLength(1);
      expect(env.deadLetters[0]).toMatchObject({
        handler: 'bulk',
        reason: 'permanent',
        error: { code: 'DW_ERR_PERMANENT', message: expect.stringContaining('data.entryId: must be lower-case') },
      });
      expect(callsIn<{ ids: string[] }>(calls)).toEqual([{ attempt: 1, ids: ['good-1', 'good-2'] }]);
    });
  });

  it('keeps subject order: a call never holds two events of a subject, each subject runs in stream order, maxBatchSize splits', async () => {
    const calls = join(tempDir('batch-calls'), 'calls.jsonl');
    process.env.BATCH_CALLS = calls;
    await withEmulator({ handlers: ORDERED, worker: { isolation, limit: 40 } }, async (env) => {
      const events = env.append(Array.from({ length: 30 }, (_, i) => ({ type: 'order.updated', subject: `order-${i % 5}`, data: { i } })));
      const settled = await env.waitForSettled(30);
      expect(settled.every((o) => o.outcome === 'ok')).toBe(true);
      const seen = callsIn<{ thread: number; events: [string, string][] }>(calls);
      const bySubject = new Map<string, bigint[]>();
      for (const call of seen) {
        expect(call.events.length).toBeLessThanOrEqual(4);
        expect(new Set(call.events.map(([subject]) => subject)).size).toBe(call.events.length);
        // In stream order within a call.
        const sequences = call.events.map(([, sequence]) => BigInt(sequence));
        expect([...sequences].sort((a, b) => (a < b ? -1 : 1))).toEqual(sequences);
        for (const [subject, sequence] of call.events) bySubject.set(subject, [...(bySubject.get(subject) ?? []), BigInt(sequence)]);
      }
      for (const [subject, sequences] of bySubject) {
        const expected = events.filter((e) => e.subject === subject).map((e) => BigInt(e.sequence));
        expect(sequences, subject).toEqual(expected);
      }
      // Batched: five subjects ready at once make calls of more than one event.
      expect(seen.some((call) => call.events.length > 1)).toBe(true);
    });
  });
});
