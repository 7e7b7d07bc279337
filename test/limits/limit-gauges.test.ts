import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { MemoryPermits } from '../../src/idempotency/memory-permits.js';
import { Limiter } from '../../src/limits/limiter.js';
import { METRIC_NAMES, createMetrics } from '../../src/observability/metrics.js';
import type { WorkerEmitter } from '../../src/observability/worker-events.js';
import { createFakeClock } from '../../src/testing/clock.js';
import type { CloudEvent } from '../../src/types.js';

const sample = (text: string, name: string, handler: string) =>
  Number(
    text
      .split('\n')
      .find((l) => l.startsWith(`${name}{handler="${handler}"} `))
      ?.split(' ')[1],
  );

describe('limit metrics', () => {
  it('per handler: the allowed rate as AIMD moves it, runs waiting for a permit, throttles heard', async () => {
    const clock = createFakeClock();
    const limiter = new Limiter(new MemoryPermits(clock), clock);
    limiter.add('crm', { adaptive: true, rate: { max: 40, perMs: 1_000 } });
    limiter.add('db', { adaptive: false, concurrency: 1 });
    const metrics = createMetrics({
      events: new EventEmitter() as WorkerEmitter,
      destination: 'd',
      collectDefaultMetrics: false,
      limits: { handlers: limiter.handlers, view: (h) => limiter.view(h) },
    });
    try {
      let text = await metrics.registry.metrics();
      expect(sample(text, METRIC_NAMES.limitAllowedRate, 'crm')).toBe(40);
      expect(text).not.toContain(`${METRIC_NAMES.limitAllowedRate}{handler="db"}`);
      expect(sample(text, METRIC_NAMES.limitThrottles, 'crm')).toBe(0);
      limiter.throttled('crm', { id: 'e', subject: 's' } as CloudEvent, 1_000);
      void limiter.wait('db', 1_000);
      text = await metrics.registry.metrics();
      expect(sample(text, METRIC_NAMES.limitAllowedRate, 'crm')).toBe(32);
      expect(sample(text, METRIC_NAMES.limitThrottles, 'crm')).toBe(1);
      expect(sample(text, METRIC_NAMES.limitWaitingRuns, 'db')).toBe(1);
      await clock.advance(1_000);
      expect(sample(await metrics.registry.metrics(), METRIC_NAMES.limitWaitingRuns, 'db')).toBe(0);
    } finally {
      metrics.close();
    }
  });
});
