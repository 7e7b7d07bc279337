import { Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { LabelledHistogram, PendingCount, flushOnCollect } from '../../src/observability/hot-path-metrics.js';

const BUCKETS = [0.001, 0.01, 0.1, 1];
/** On a bound, between bounds, past the last one, zero, and many of one value. */
const OBSERVATIONS: [string, number][] = [
  ['a.created', 0],
  ['a.created', 0.001],
  ['a.created', 0.0011],
  ['b.updated', 0.1],
  ['b.updated', 0.5],
  ['a.created', 7],
  ...Array.from({ length: 50 }, (_, i): [string, number] => ['b.updated', 0.01 * (i % 3)]),
];

describe('LabelledHistogram', () => {
  it("reads exactly as prom-client's Histogram, in text and as JSON", async () => {
    const theirs = new Registry();
    const ours = new Registry();
    const reference = new Histogram({ name: 'x_seconds', help: 'h', labelNames: ['type'], buckets: BUCKETS, registers: [theirs] });
    const histogram = new LabelledHistogram({ name: 'x_seconds', help: 'h', labelName: 'type', buckets: BUCKETS, registers: [ours] });
    for (const [type, value] of OBSERVATIONS) {
      reference.observe({ type }, value);
      histogram.series(type).observe(value);
    }
    expect(await ours.metrics()).toBe(await theirs.metrics());
    expect(await ours.getMetricsAsJSON()).toEqual(await theirs.getMetricsAsJSON());
    expect(await ours.metrics()).toContain('x_seconds_bucket{le="0.001",type="a.created"} 2');
  });

  it('keeps one series per label value and zeroes it on reset', async () => {
    const registry = new Registry();
    const histogram = new LabelledHistogram({ name: 'y_seconds', help: 'h', labelName: 'type', buckets: BUCKETS, registers: [registry] });
    expect(histogram.series('a')).toBe(histogram.series('a'));
    histogram.series('a').observe(0.5);
    registry.resetMetrics();
    expect(await registry.metrics()).toContain('y_seconds_count{type="a"} 0');
    histogram.series('a').observe(0.5);
    expect(await registry.metrics()).toContain('y_seconds_count{type="a"} 1');
  });
});

describe('PendingCount', () => {
  it('adds its counts to the counter whenever the registry is read', async () => {
    const registry = new Registry();
    const counts: PendingCount[] = [];
    const counter = new Counter({ name: 'z_total', help: 'h', labelNames: ['outcome'], registers: [registry], collect: flushOnCollect(counts) });
    const ok = new PendingCount(counter.labels({ outcome: 'ok' }));
    counts.push(ok);
    ok.inc();
    ok.inc();
    expect(await registry.metrics()).toContain('z_total{outcome="ok"} 2');
    ok.inc();
    expect(await registry.getMetricsAsJSON()).toEqual([expect.objectContaining({ values: [{ labels: { outcome: 'ok' }, value: 3 }] })]);
  });
});
