/**
 * Every PromQL expression of the dashboard, the alert rules and the KEDA trigger uses only metric names
 * that durable-worker exports (docs/metrics.md, and the real prom-client registry).
 */
import { EventEmitter } from 'node:events';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../src/observability/metrics.js';
import type { WorkerEmitter } from '../../src/observability/worker-events.js';
import { CHART_DIR, REPO_ROOT } from './tools.js';

/** The names dashboards and alerts have always relied on (prefix durable_worker_); the histogram also exports _bucket/_sum/_count. */
const RELIED_ON_METRICS = [
  'events_total',
  'handler_duration_seconds',
  'pulls_total',
  'acks_total',
  'lag_events',
  'committed_sequence',
  'in_flight_events',
  'last_caught_up_timestamp_seconds',
  'dead_letters',
  'leases_held',
  'pull_duration_seconds',
  'ack_duration_seconds',
];
/** The rest of docs/metrics.md: runs (events_total's new name), the backlog signal, listener errors, the breakers. */
const MORE_METRICS = [
  'runs_total',
  'backlog_age_seconds',
  'listener_errors_total',
  'breaker_state',
  'deferred_runs',
  'deferred_oldest_age_seconds',
  'limit_allowed_rate',
  'limit_waiting_runs',
  'limit_throttles_total',
];
const HISTOGRAMS = ['handler_duration_seconds', 'pull_duration_seconds', 'ack_duration_seconds'];
/** Not ours, but scraped next to ours: Prometheus' own `up` and prom-client's default metrics we chart. */
const OTHER_ALLOWED = new Set(['up', 'process_resident_memory_bytes', 'process_cpu_seconds_total', 'nodejs_heap_size_used_bytes']);

function exportedSeriesNames(): Set<string> {
  const names = new Set<string>();
  for (const metric of [...RELIED_ON_METRICS, ...MORE_METRICS]) {
    const full = `durable_worker_${metric}`;
    if (HISTOGRAMS.includes(metric)) for (const suffix of ['_bucket', '_sum', '_count']) names.add(full + suffix);
    else names.add(full);
  }
  return names;
}

interface Expression {
  where: string;
  expr: string;
}

function dashboardExpressions(): Expression[] {
  const dashboard = JSON.parse(readFileSync(join(REPO_ROOT, 'deploy', 'grafana', 'durable-worker-dashboard.json'), 'utf8')) as {
    panels: Array<{ title: string; type: string; targets?: Array<{ expr: string }> }>;
    templating: { list: Array<{ name: string; type: string; query?: { query: string } | string }> };
  };
  const out: Expression[] = [];
  for (const panel of dashboard.panels) for (const target of panel.targets ?? []) out.push({ where: `panel "${panel.title}"`, expr: target.expr });
  for (const variable of dashboard.templating.list) {
    if (variable.type !== 'query') continue;
    const query = typeof variable.query === 'string' ? variable.query : (variable.query?.query ?? '');
    // label_values(<selector>, label): the selector is PromQL.
    out.push({ where: `variable $${variable.name}`, expr: /^label_values\((.*),\s*\w+\)$/.exec(query)?.[1] ?? query });
  }
  return out;
}

/** `expr: |` blocks of a rule file (the indented lines under it). */
function ruleExpressions(): Expression[] {
  const lines = readFileSync(join(REPO_ROOT, 'deploy', 'prometheus', 'durable-worker-rules.yaml'), 'utf8').split('\n');
  const out: Expression[] = [];
  let alert = '';
  lines.forEach((line, i) => {
    const name = /- alert: (\w+)/.exec(line);
    if (name) alert = name[1]!;
    const expr = /^(\s*)expr: (\|)?(.*)$/.exec(line);
    if (!expr) return;
    if (!expr[2]) return void out.push({ where: `alert ${alert}`, expr: expr[3]! });
    const indent = expr[1]!.length;
    const body: string[] = [];
    for (const next of lines.slice(i + 1)) {
      if (next.trim() !== '' && next.length - next.trimStart().length <= indent) break;
      body.push(next.trim());
    }
    out.push({ where: `alert ${alert}`, expr: body.join(' ') });
  });
  return out;
}

function kedaExpression(): Expression {
  const template = readFileSync(join(CHART_DIR, 'templates', 'scaledobject.yaml'), 'utf8');
  const format = /printf "(max\(durable_worker_[^"]+)"/.exec(template)?.[1] ?? '';
  return { where: 'KEDA default query', expr: format.replace(/%q/g, '"x"') };
}

/**
 * Metric names in a PromQL expression: identifiers not followed by `(` (functions), not inside
 * quotes or braces (label values, matchers), not after `by`/`without` (label lists), not keywords.
 */
function metricNames(expr: string): string[] {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, '{}')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, '')
    .replace(/\[[^\]]*\]/g, '[]');
  const keywords = new Set(['and', 'or', 'unless', 'by', 'without', 'on', 'ignoring', 'offset', 'bool', 'le', 'inf', 'nan']);
  return [...stripped.matchAll(/\b([a-zA-Z_:][a-zA-Z0-9_:]*)\b(?!\s*\()/g)]
    .map((m) => m[1]!)
    .filter((name) => !keywords.has(name.toLowerCase()) && !/^\d/.test(name) && !name.startsWith('$'));
}

const expressions = [...dashboardExpressions(), ...ruleExpressions(), kedaExpression()];

describe('metric names used in dashboards, alerts and KEDA', () => {
  it('finds the expressions', () => {
    expect(dashboardExpressions().length).toBeGreaterThanOrEqual(15);
    expect(ruleExpressions().length).toBeGreaterThanOrEqual(5);
    expect(kedaExpression().expr).toContain('durable_worker_backlog_age_seconds');
  });

  it('the name extractor sees metrics and skips functions, labels and keywords', () => {
    expect(metricNames('histogram_quantile(0.95, sum by (le, type) (rate(durable_worker_handler_duration_seconds_bucket{job=~"$job"}[5m])))')).toEqual([
      'durable_worker_handler_duration_seconds_bucket',
    ]);
    expect(metricNames('time() - max by (job) (foo_seconds) > 3600 and bar_total{status="stale"} == 0')).toEqual(['foo_seconds', 'bar_total']);
  });

  it.each(expressions.map((e) => [e.where, e.expr] as const))('%s uses only exported metrics', (_where, expr) => {
    const names = metricNames(expr);
    expect(names.length, `no metric in ${expr}`).toBeGreaterThan(0);
    const exported = exportedSeriesNames();
    const unknown = names.filter((n) => (n.startsWith('durable_worker_') ? !exported.has(n) : !OTHER_ALLOWED.has(n)));
    expect(unknown).toEqual([]);
  });

  it('the dashboard charts what the issue lists', () => {
    const all = dashboardExpressions()
      .map((e) => e.expr)
      .join('\n');
    for (const needle of [
      'durable_worker_events_total',
      'sum by (type, outcome)',
      'durable_worker_handler_duration_seconds_bucket',
      'durable_worker_backlog_age_seconds',
      'status="stale"',
      'sum by (status) (rate(durable_worker_pulls_total',
      'durable_worker_in_flight_events',
      'process_resident_memory_bytes',
      'process_cpu_seconds_total',
      'max by (handler, reason) (durable_worker_dead_letters',
    ]) {
      expect(all).toContain(needle);
    }
  });

  it('every name the dashboards and alerts use is in the real prom-client registry', async () => {
    const metrics = createMetrics({ events: new EventEmitter() as WorkerEmitter, destination: 'd' });
    try {
      const text = await metrics.registry.metrics();
      const registryNames = new Set(
        [...text.matchAll(/^# TYPE (\S+) (\w+)$/gm)].flatMap((m) => (m[2] === 'histogram' ? [`${m[1]}_bucket`, `${m[1]}_sum`, `${m[1]}_count`] : [m[1]!])),
      );
      const used = new Set(expressions.flatMap((e) => metricNames(e.expr)).filter((n) => n !== 'up'));
      expect([...used].filter((n) => !registryNames.has(n))).toEqual([]);
      // and the list above (the names relied on, and the rest) matches what the code exports
      for (const name of exportedSeriesNames()) expect(registryNames.has(name), name).toBe(true);
    } finally {
      metrics.close();
    }
  });
});
