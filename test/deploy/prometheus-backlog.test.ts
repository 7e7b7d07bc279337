/**
 * The backlog signal end to end, through a real Prometheus (Debian's server binary) scraping workers
 * that run against the emulator, with the chart's own PrometheusRule and KEDA query as `helm template`
 * renders them: only the scrape and evaluation intervals are the test's (1 s).
 *
 * Ingest outpaces the handlers: the KEDA query crosses its threshold, a second replica starts (as KEDA
 * would start it) and, idle at first, must not pull the query down; the lag alert fires. Then ingest
 * stops and the downstream gets fast (caught up at the old speed would take as long as falling
 * behind did): the replicas catch up, and the query and the alert clear. Every dashboard query then
 * returns data on the healthy workers, or its panel has a `noValue`.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { startWorker } from '../../src/worker/start.js';
import type { RunningWorker } from '../../src/worker/running-worker.js';
import { waitFor } from '../fixtures/wait-for.js';
import { workerConfig } from '../worker/harness.js';
import { onlyDoc, splitManifests } from './manifests.js';
import { startPrometheus, type RunningPrometheus, type ScrapeTarget } from './prometheus-server.js';
import { CHART_DIR, REPO_ROOT, run, STANDALONE_VALUES, toolGate } from './tools.js';

const prometheusBinary = toolGate('prometheus', 'apt-get install prometheus (the server, from the same package as promtool)');
const helm = toolGate('helm', 'bash .ci/deploy-tools.sh builds it with `go install helm.sh/helm/v3/cmd/helm@v3.16.4`');

const NAMESPACE = 'shop';
const RELEASE = 'orders';
const DESTINATION = 'dev-consumer';
const ALERT = 'DurableWorkerConsumerLagGrowing';
const HANDLERS_DIR = join(REPO_ROOT, 'test', 'fixtures', 'backlog-handlers');
/** Events appended per tick of INGEST_EVERY_MS: 100 events/s against 10 per second and replica. */
const INGEST_PER_TICK = 10;
const INGEST_EVERY_MS = 100;
const SLOW_DELAY_MS = 200;

declare global {
  // Read by test/fixtures/backlog-handlers/downstream.mjs.
  var backlogTestDelayMs: number | undefined;
}

interface Chart {
  /** The ScaledObject's Prometheus trigger. */
  keda: { query: string; threshold: number; activationThreshold: number };
  /** The Service's name: the `job` label a ServiceMonitor gives its targets. */
  service: string;
  /** The PrometheusRule's spec as a plain rule file. */
  rulesFile: string;
}

/** A quoted YAML scalar as helm's `quote` writes it (a Go string literal, JSON-compatible here). */
function quotedField(text: string, key: string): string {
  const match = new RegExp(`^\\s+${key}: (".*")$`, 'm').exec(text);
  if (!match) throw new Error(`no ${key} in\n${text}`);
  return JSON.parse(match[1]!) as string;
}

function renderChart(dir: string): Chart {
  const result = run(helm.path!, [
    'template',
    RELEASE,
    CHART_DIR,
    '--namespace',
    NAMESPACE,
    '-f',
    STANDALONE_VALUES,
    '--set',
    `keda.enabled=true,serviceMonitor.enabled=true,prometheusRule.enabled=true,worker.destination=${DESTINATION},worker.idempotency=redis://redis:6379`,
  ]);
  if (result.code !== 0) throw new Error(`helm template failed: ${result.stderr}`);
  const docs = splitManifests(result.stdout);
  const scaled = onlyDoc(docs, 'ScaledObject').text;
  const monitor = onlyDoc(docs, 'ServiceMonitor').text;
  // The chart's ServiceMonitor sets no jobLabel and no relabelings: the operator's defaults apply.
  expect(monitor).not.toMatch(/jobLabel|relabelings|targetLabels/);
  expect(monitor).toMatch(/- port: metrics\n\s+path: \/metrics/);
  const rulesFile = join(dir, 'rendered-rules.yaml');
  writeFileSync(
    rulesFile,
    onlyDoc(docs, 'PrometheusRule')
      .text.split(/^spec:\n/m)[1]!
      .split('\n')
      .map((l) => l.slice(2))
      .join('\n'),
  );
  return {
    keda: {
      query: quotedField(scaled, 'query'),
      threshold: Number(quotedField(scaled, 'threshold')),
      activationThreshold: Number(quotedField(scaled, 'activationThreshold')),
    },
    service: onlyDoc(docs, 'Service').name,
    rulesFile,
  };
}

/** The labels the Prometheus Operator gives a target of the chart's ServiceMonitor (pod IP:port aside). */
function podTarget(chart: Chart, pod: string, metricsUrl: string): ScrapeTarget {
  return {
    address: new URL(metricsUrl).host,
    labels: { job: chart.service, namespace: NAMESPACE, service: chart.service, pod, container: 'durable-worker', endpoint: 'metrics' },
  };
}

describe.skipIf(prometheusBinary.skip || helm.skip)('backlog signal through a real Prometheus', () => {
  let dir: string;
  let chart: Chart;
  let emulator: RunningEmulator;
  let prometheus: RunningPrometheus;
  const replicas: RunningWorker[] = [];
  const targets: ScrapeTarget[] = [];

  async function startReplica(index: number): Promise<void> {
    const pod = `${RELEASE}-durable-worker-7d9f-${index}`;
    const worker = await startWorker(
      workerConfig(emulator, DESTINATION, dir, {
        handlersDir: HANDLERS_DIR,
        workerIdPrefix: pod,
        limit: 20,
        visibilitySeconds: 60,
        concurrency: 2,
        maxAttempts: 5,
      }),
    );
    replicas.push(worker);
    targets.push(podTarget(chart, pod, worker.metricsUrl!));
    prometheus.setTargets(targets);
  }

  const consumer = () =>
    emulator
      .state()
      .tenants.find((t) => t.id === 'dev-tenant')!
      .consumers.find((c) => c.id === DESTINATION)!;
  /** Head minus committed: the real backlog, which no worker can see. */
  const realBacklog = () => Number(consumer().head ?? 0) - Number(consumer().committed ?? consumer().startedAfter);
  const kedaValue = async () => (await prometheus.query(chart.keda.query))[0]?.value;
  const firing = async () => (await prometheus.alerts()).filter((a) => a.labels.alertname === ALERT && a.state === 'firing');
  const active = async () => (await prometheus.alerts()).filter((a) => a.labels.alertname === ALERT);

  beforeAll(async () => {
    expect(prometheusBinary.path, 'prometheus is missing: apt-get install prometheus').toBeDefined();
    expect(helm.path, 'helm is missing: bash .ci/deploy-tools.sh').toBeDefined();
    dir = mkdtempSync(join(tmpdir(), 'dw-backlog-'));
    chart = renderChart(dir);
    globalThis.backlogTestDelayMs = SLOW_DELAY_MS;
    emulator = await startEmulator({ port: 0 });
    prometheus = await startPrometheus({
      binary: prometheusBinary.path!,
      ruleFiles: [chart.rulesFile],
      scrapeIntervalSeconds: 1,
      evaluationIntervalSeconds: 1,
    });
    await startReplica(0);
  }, 60_000);

  afterAll(async () => {
    for (const worker of replicas) await worker.close().catch(() => undefined);
    await prometheus?.close();
    await emulator?.close();
    globalThis.backlogTestDelayMs = undefined;
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it('the chart renders the KEDA trigger on the backlog age, and the Service that names the job', () => {
    expect(chart.keda.query).toBe(`max(durable_worker_backlog_age_seconds{namespace="${NAMESPACE}",destination="${DESTINATION}"})`);
    expect(chart.keda.threshold).toBeGreaterThan(0);
    expect(chart.service).toBe(`${RELEASE}-durable-worker`);
  });

  it(
    'ingest faster than the handlers: the KEDA query crosses its threshold and the alert fires; caught up, both clear',
    async () => {
      // Scraped as the ServiceMonitor labels it, and idle: 0 s behind.
      await waitFor(
        'the first replica to be scraped',
        async () => (await prometheus.query(`up{job="${chart.service}",namespace="${NAMESPACE}",endpoint="metrics"} == 1`)).length === 1,
        60_000,
        500,
      );
      expect(await kedaValue()).toBe(0);

      let sequence = 0;
      const ingest = setInterval(() => {
        emulator.appendEvents(
          'dev-tenant',
          Array.from({ length: INGEST_PER_TICK }, () => ({ type: 'backlog.test', subject: `entry-${++sequence}`, data: { n: sequence } })),
        );
      }, INGEST_EVERY_MS);
      try {
        const crossed = await waitFor(
          'the KEDA query to cross its threshold',
          async () => {
            const value = (await kedaValue()) ?? 0;
            return value > chart.keda.threshold && value;
          },
          180_000,
          1_000,
        );
        expect(crossed).toBeGreaterThan(chart.keda.threshold);
        expect(realBacklog()).toBeGreaterThan(500);

        // KEDA would now add a replica: it starts with nothing leased, and must not pull the max down.
        await startReplica(1);
        await waitFor('the second replica to be scraped', async () => (await prometheus.query(`up{job="${chart.service}"} == 1`)).length === 2, 60_000, 500);
        expect(await kedaValue()).toBeGreaterThan(chart.keda.threshold);
        const ages = await prometheus.query(`durable_worker_backlog_age_seconds{job="${chart.service}"}`);
        expect(ages.map((s) => s.metric.pod).sort()).toEqual([`${RELEASE}-durable-worker-7d9f-0`, `${RELEASE}-durable-worker-7d9f-1`]);

        // Two replicas at 10 events/s each are still slower than ingest: the alert fires.
        const alerts = await waitFor(
          'the lag alert to fire',
          async () => {
            const now = await firing();
            return now.length > 0 && now;
          },
          360_000,
          1_000,
        );
        expect(alerts).toHaveLength(1);
        expect(alerts[0]!.labels).toMatchObject({ alertname: ALERT, severity: 'warning', namespace: NAMESPACE, job: chart.service, destination: DESTINATION });
        expect(Number(alerts[0]!.value)).toBeGreaterThan(60);
        const backlog = realBacklog();
        expect(backlog).toBeGreaterThan(2_000);
        expect(await kedaValue()).toBeGreaterThan(chart.keda.threshold);
        // What the issue saw: lag_events only counts what the replicas lease, nowhere near the backlog.
        const lag = (await prometheus.query(`max(durable_worker_lag_events{job="${chart.service}"})`))[0]!.value;
        expect(lag).toBeLessThan(backlog / 10);
      } finally {
        clearInterval(ingest);
      }

      // The downstream recovers: the replicas work through the backlog and catch up.
      globalThis.backlogTestDelayMs = 0;
      await waitFor('the replicas to commit the whole stream', () => realBacklog() === 0 && consumer().leased === 0, 120_000, 250);
      const cleared = await waitFor(
        'the KEDA query to fall to its activation threshold',
        async () => {
          const value = await kedaValue();
          return value !== undefined && value <= chart.keda.activationThreshold && { value };
        },
        60_000,
        500,
      );
      expect(cleared.value).toBe(0);
      await waitFor('the lag alert to resolve', async () => (await active()).length === 0, 60_000, 1_000);
    },
    12 * 60_000,
  );

  it('every dashboard query returns data on the healthy workers, or its panel has a noValue', async () => {
    globalThis.backlogTestDelayMs = 0;
    // Healthy and recently busy: a few events handled, everyone caught up, and scraped since.
    const handled = async () => (await prometheus.query(`sum(durable_worker_events_total{job="${chart.service}"})`))[0]?.value ?? 0;
    const before = await handled();
    emulator.appendEvents(
      'dev-tenant',
      Array.from({ length: 20 }, (_, i) => ({ type: 'backlog.test', subject: `healthy-${i}`, data: { i } })),
    );
    await waitFor('the workers to catch up', () => realBacklog() === 0 && consumer().leased === 0, 60_000, 100);
    await waitFor('a scrape after the last events', async () => (await handled()) >= before + 20, 30_000, 500);
    await waitFor('both replicas caught up in Prometheus', async () => (await kedaValue()) === 0, 30_000, 500);

    const dashboard = JSON.parse(readFileSync(join(REPO_ROOT, 'deploy', 'grafana', 'durable-worker-dashboard.json'), 'utf8')) as {
      panels: Array<{ title: string; targets?: Array<{ expr: string }>; fieldConfig?: { defaults?: { noValue?: string } } }>;
      templating: { list: Array<{ name: string; type: string; query?: { query: string } }> };
    };
    // Grafana's variables as "All" and a rate window that spans several 1 s scrapes.
    const grafana = (expr: string) => expr.replaceAll('$namespace', '.*').replaceAll('$job', '.*').replaceAll('$__rate_interval', '1m');
    const empty: string[] = [];
    let queried = 0;
    for (const panel of dashboard.panels) {
      for (const target of panel.targets ?? []) {
        queried++;
        const samples = await prometheus.query(grafana(target.expr));
        if (samples.length === 0 && panel.fieldConfig?.defaults?.noValue === undefined) empty.push(`${panel.title}: ${target.expr}`);
      }
    }
    for (const variable of dashboard.templating.list.filter((v) => v.type === 'query')) {
      const selector = /^label_values\((.*),\s*(\w+)\)$/.exec(variable.query!.query)!;
      queried++;
      const values = (await prometheus.query(grafana(selector[1]!))).map((s) => s.metric[selector[2]!]);
      if (!values.includes(variable.name === 'namespace' ? NAMESPACE : chart.service)) empty.push(`variable $${variable.name}: ${variable.query!.query}`);
    }
    expect(queried).toBeGreaterThanOrEqual(18);
    expect(empty).toEqual([]);
    // Dead letters are the case the issue names: none on a healthy worker, so its panel says 0.
    const deadLettered = dashboard.panels.find((p) => p.title === 'Dead-lettered (1h)')!;
    expect(await prometheus.query(grafana(deadLettered.targets![0]!.expr))).toEqual([]);
    expect(deadLettered.fieldConfig?.defaults?.noValue).toBe('0');
  }, 120_000);
});
