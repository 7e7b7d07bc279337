import { EventEmitter } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEmulator } from '../../src/emulator/index.js';
import { startWorker } from '../../src/worker/start.js';
import { startTestApp } from '../forward/app-server.js';
import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../src/observability/metrics.js';
import type { WorkerEmitter, WorkerEventMap } from '../../src/observability/worker-events.js';
import { toolGate } from './tools.js';
import { checkMetrics } from './promtool-metrics.js';
import { waitFor } from '../fixtures/wait-for.js';

const promtool = toolGate('promtool', 'apt-get install prometheus');

describe.skipIf(promtool.skip)('promtool check metrics', () => {
  it('promtool is installed', () => {
    expect(promtool.path, 'promtool is missing: apt-get install prometheus').toBeDefined();
  });

  it("the verdict rejects malformed text and any lint, prom-client's own included", () => {
    expect(checkMetrics(promtool.path!, '# TYPE x counter\nx{a="1" 1\n').ok).toBe(false);
    const lint = checkMetrics(promtool.path!, '# HELP my_thing_total a gauge\n# TYPE my_thing_total gauge\nmy_thing_total 1\n');
    expect(lint.code).toBe(3);
    expect(lint.ok).toBe(false);
    const promClient = checkMetrics(
      promtool.path!,
      '# HELP nodejs_active_handles_total Total number of active handles.\n# TYPE nodejs_active_handles_total gauge\nnodejs_active_handles_total 3\n',
    );
    expect(promClient.problems).toEqual(['nodejs_active_handles_total non-counter metrics should not have "_total" suffix']);
    expect(promClient.ok).toBe(false);
    expect(checkMetrics(promtool.path!, '# HELP ok_total fine\n# TYPE ok_total counter\nok_total 1\n').ok).toBe(true);
  });

  it('the worker registry with every series populated passes with no lint', async () => {
    const bus = new EventEmitter() as WorkerEmitter;
    const metrics = createMetrics({ events: bus, destination: 'dest-1' });
    try {
      const emit = <K extends keyof WorkerEventMap>(name: K, ...args: WorkerEventMap[K]) => (bus as unknown as EventEmitter).emit(name, ...args);
      const event = { specversion: '1.0' as const, id: 'e1', type: 'source_entry.updated', subject: 's', sequence: '7', data: {} };
      emit('pull:done', { workerId: 'w-0', status: '200', eventCount: 1, durationMs: 3 });
      emit('lease:pulled', { workerId: 'w-0', leaseId: 'l', generation: 1, deliveryAttempt: 1, events: [event] });
      emit('run:done', { workerId: 'w-0', event, handler: 'h', outcome: 'ok', durationMs: 12 });
      emit('inflight:changed', { inFlight: 2 });
      emit('ack:done', {
        workerId: 'w-0',
        leaseId: 'l',
        generation: 1,
        sent: 'ok',
        status: 'committed',
        response: { status: 'committed', committed: '7' },
        lastSequence: '7',
      });
      emit('caught-up', { workerId: 'w-0', at: Date.now() });
      const text = await metrics.registry.metrics();
      expect(text).toMatch(/^durable_worker_handler_duration_seconds_bucket\{le="0.025",type="source_entry.updated"\} 1$/m);
      const verdict = checkMetrics(promtool.path!, text);
      expect(verdict.problems).toEqual([]);
      expect(verdict.code).toBe(0);
    } finally {
      metrics.close();
    }
  });

  it('a real scrape of a running worker (emulator + forwarding app) passes with no lint', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dw-scrape-'));
    const emulator = await startEmulator({ port: 0 });
    const app = await startTestApp('/events');
    const events = emulator.appendEvents('dev-tenant', [
      { type: 'scrape.ok', subject: 'a', data: { n: 1 } },
      { type: 'scrape.bad', subject: 'b', data: { n: 2 } },
    ]);
    app.behaviours.set(events[1]!.id, 400);
    const worker = await startWorker({
      baseUrl: emulator.url,
      authUrl: emulator.url,
      destination: 'dev-consumer',
      tenant: 'dev-tenant',
      clientId: 'dev-client',
      clientSecret: 'dev-secret',
      handlersDir: join(dir, 'none'),
      workers: 1,
      workerIdPrefix: 'scrape',
      limit: 10,
      visibilitySeconds: 10,
      concurrency: 4,
      maxAttempts: 2,
      idempotencyUrl: 'memory',
      idempotencyPrefix: 'scrape',
      idempotencyTtlMs: 60_000,
      deadLetterUrl: `file:${join(dir, 'dead-letter.jsonl')}`,
      metricsPort: 0,
      metricsHost: '127.0.0.1',
      exitWhenIdle: false,
      logLevel: 'silent',
      isolation: 'none',
      shutdownTimeoutSeconds: 2,
      forwardUrl: app.url,
      forwardMode: 'binary',
    });
    try {
      const base = worker.metricsUrl!.replace(/\/metrics$/, '');
      // Poll until the outcomes of both events are visible, so histogram and labelled series exist.
      const text = await waitFor(
        'the metrics to show the dead letter',
        async () => {
          const scraped = await (await fetch(`${base}/metrics`)).text();
          return /durable_worker_events_total\{type="scrape\.bad",outcome="dead_lettered"\} 1/.test(scraped) && scraped;
        },
        20_000,
        50,
      );
      expect(text).toMatch(/^durable_worker_handler_duration_seconds_count\{type="scrape\.ok"\} 1$/m);
      expect(text).toMatch(/^process_resident_memory_bytes \d+/m);
      expect(text).toMatch(/^durable_worker_backlog_age_seconds\{destination="dev-consumer"\} [\d.e+-]+$/m);
      // prom-client's `_total` gauges are dropped; their per-type gauges stay (sum() = the total).
      expect(text).not.toMatch(/^nodejs_active_\w+_total/m);
      expect(text).toMatch(/^nodejs_active_handles\{type="\w+"\} \d+$/m);
      const verdict = checkMetrics(promtool.path!, text);
      expect(verdict.problems).toEqual([]);
      expect(verdict.code).toBe(0);
    } finally {
      await worker.close();
      await app.close();
      await emulator.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
