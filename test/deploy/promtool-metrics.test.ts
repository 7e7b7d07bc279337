import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../src/observability/metrics.js';
import type { WorkerEmitter, WorkerEventMap } from '../../src/worker/events.js';
import { toolGate } from './tools.js';
import { checkMetrics } from './promtool-metrics.js';

const promtool = toolGate('promtool', 'apt-get install prometheus');

describe.skipIf(promtool.skip)('promtool check metrics', () => {
  it('promtool is installed', () => {
    expect(promtool.path, 'promtool is missing: apt-get install prometheus').toBeDefined();
  });

  it('the verdict rejects malformed text and unknown lint warnings', () => {
    expect(checkMetrics(promtool.path!, '# TYPE x counter\nx{a="1" 1\n').ok).toBe(false);
    const lint = checkMetrics(promtool.path!, '# HELP my_thing_total a gauge\n# TYPE my_thing_total gauge\nmy_thing_total 1\n');
    expect(lint.code).toBe(3);
    expect(lint.ok).toBe(false);
    expect(checkMetrics(promtool.path!, '# HELP ok_total fine\n# TYPE ok_total counter\nok_total 1\n').ok).toBe(true);
  });

  it('the worker registry with every series populated passes (only the known prom-client lint)', async () => {
    const bus = new EventEmitter() as WorkerEmitter;
    const metrics = createMetrics({ events: bus, destination: 'dest-1' });
    try {
      const emit = <K extends keyof WorkerEventMap>(name: K, ...args: WorkerEventMap[K]) => (bus as unknown as EventEmitter).emit(name, ...args);
      const event = { specversion: '1.0' as const, id: 'e1', type: 'source_entry.updated', subject: 's', sequence: '7', data: {} };
      emit('pull:done', { workerId: 'w-0', status: '200', eventCount: 1, durationMs: 3 });
      emit('batch:pulled', { workerId: 'w-0', leaseId: 'l', generation: 1, attempt: 1, events: [event] });
      emit('event:done', { workerId: 'w-0', event, handler: 'h', outcome: 'ok', durationMs: 12 });
      emit('inflight:changed', { inFlight: 2 });
      emit('ack:done', { workerId: 'w-0', leaseId: 'l', generation: 1, sent: 'ok', status: 'committed', response: { status: 'committed', committed: '7' }, lastSequence: '7' });
      emit('caught-up', { workerId: 'w-0', at: Date.now() });
      const text = await metrics.registry.metrics();
      expect(text).toMatch(/^durable_worker_handler_duration_seconds_bucket\{le="0.025",type="source_entry.updated"\} 1$/m);
      const verdict = checkMetrics(promtool.path!, text);
      expect(verdict.unexpected).toEqual([]);
      expect(verdict.ok, verdict.output).toBe(true);
    } finally {
      metrics.close();
    }
  });
});
