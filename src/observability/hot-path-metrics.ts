import type { Counter, Registry } from 'prom-client';

/**
 * Metrics written once per handler run. prom-client validates and hashes the label object on every
 * `inc` and `observe`, even through a `labels()` child: for these two metrics, written for every
 * event, that is a cost next to a no-op handler's. Here a label set's series is looked up once and kept, and observing
 * it is plain arithmetic.
 */

/** Counts of one label set, added to the prom-client counter when it is read. */
export class PendingCount {
  readonly #child: { inc(value: number): void };
  #pending = 0;

  /** `child`: the counter's `labels(...)` for this label set. */
  constructor(child: { inc(value: number): void }) {
    this.#child = child;
  }

  inc(): void {
    this.#pending++;
  }

  /** Moves what was counted since the last read into the counter. */
  flush(): void {
    if (this.#pending === 0) return;
    this.#child.inc(this.#pending);
    this.#pending = 0;
  }
}

/** The `collect` hook of a counter whose series are `PendingCount`s: a scrape sees every count. */
export function flushOnCollect(series: Iterable<PendingCount>): (this: Counter) => void {
  return () => {
    for (const count of series) count.flush();
  };
}

/** One label set's buckets, sum and count. */
export class HistogramSeries {
  /** counts[i]: observations <= bounds[i] and > bounds[i - 1]; the last one is +Inf's own. */
  readonly counts: Float64Array;
  readonly labels: Readonly<Record<string, string>>;
  sum = 0;
  count = 0;
  readonly #bounds: readonly number[];

  /** `bounds`: the buckets' upper bounds, ascending. */
  constructor(bounds: readonly number[], labels: Readonly<Record<string, string>>) {
    this.#bounds = bounds;
    this.labels = labels;
    this.counts = new Float64Array(bounds.length + 1);
  }

  observe(value: number): void {
    const bounds = this.#bounds;
    let i = 0;
    while (i < bounds.length && value > (bounds[i] as number)) i++;
    (this.counts[i] as number)++;
    this.sum += value;
    this.count++;
  }

  reset(): void {
    this.counts.fill(0);
    this.sum = 0;
    this.count = 0;
  }
}

interface Sample {
  value: number;
  labels: Record<string, string | number>;
  sharedLabels?: Record<string, string>;
  metricName: string;
  /** prom-client's bucket samples carry `exemplar: null` when exemplars are off. */
  exemplar?: null;
}

/**
 * A histogram with labels that prom-client's `Registry` serialises as its own: it has the metric
 * interface the registry reads (`get`, `getForPromString`, `reset`, `aggregator`) and writes the
 * same samples, in the same order, as prom-client's `Histogram` (cumulative `_bucket` with `le`
 * first, then `+Inf`, `_sum`, `_count`).
 */
export class LabelledHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  readonly name: string;
  readonly help: string;
  readonly #bounds: readonly number[];
  readonly #series = new Map<string, HistogramSeries>();
  readonly #labelName: string;

  constructor(options: { name: string; help: string; labelName: string; buckets: readonly number[]; registers: Registry[] }) {
    this.name = options.name;
    this.help = options.help;
    this.#labelName = options.labelName;
    this.#bounds = [...options.buckets].sort((a, b) => a - b);
    for (const registry of options.registers) registry.registerMetric(this as never);
  }

  /** The series of one label value (created on first use): keep it and observe through it. */
  series(labelValue: string): HistogramSeries {
    let series = this.#series.get(labelValue);
    if (series === undefined) {
      series = new HistogramSeries(this.#bounds, { [this.#labelName]: labelValue });
      this.#series.set(labelValue, series);
    }
    return series;
  }

  /** As the registry writes the text format: the label set as `sharedLabels`, after `le`. */
  async getForPromString(): Promise<{ name: string; help: string; type: string; values: Sample[]; aggregator: string }> {
    const values: Sample[] = [];
    for (const series of this.#series.values()) {
      let cumulative = 0;
      for (let i = 0; i < this.#bounds.length; i++) {
        cumulative += series.counts[i] as number;
        values.push({
          labels: { le: this.#bounds[i] as number },
          sharedLabels: series.labels,
          value: cumulative,
          metricName: `${this.name}_bucket`,
          exemplar: null,
        });
      }
      values.push(
        { labels: { le: '+Inf' }, sharedLabels: series.labels, value: series.count, metricName: `${this.name}_bucket`, exemplar: null },
        { labels: {}, sharedLabels: series.labels, value: series.sum, metricName: `${this.name}_sum` },
        { labels: {}, sharedLabels: series.labels, value: series.count, metricName: `${this.name}_count` },
      );
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  /** As `Registry.getMetricsAsJSON` reads it: one label object per sample. */
  async get(): Promise<{ name: string; help: string; type: string; values: Sample[]; aggregator: string }> {
    const metric = await this.getForPromString();
    metric.values = metric.values.map(({ sharedLabels, labels, ...sample }) => ({ ...sample, labels: { ...labels, ...sharedLabels } }));
    return metric;
  }

  reset(): void {
    for (const series of this.#series.values()) series.reset();
  }
}
