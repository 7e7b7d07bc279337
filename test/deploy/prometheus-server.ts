/**
 * A real Prometheus server (Debian's `prometheus` binary) for tests: started on a free loopback port
 * with a temporary config, its targets in a file_sd file the test rewrites (Prometheus notices the
 * change by itself), queried through its HTTP API.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, renameSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from '../fixtures/wait-for.js';
import { freePort } from '../idempotency/private-servers.js';

/** One scrape target with its target labels (`job`, `namespace`, `pod`... as service discovery would set them). */
export interface ScrapeTarget {
  address: string;
  labels: Record<string, string>;
}

export interface PrometheusOptions {
  /** Path of the `prometheus` binary. */
  binary: string;
  /** Rule files to load (evaluated every `evaluationIntervalSeconds`). */
  ruleFiles: string[];
  scrapeIntervalSeconds: number;
  evaluationIntervalSeconds: number;
}

export interface Sample {
  metric: Record<string, string>;
  value: number;
}

export interface Alert {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  state: 'pending' | 'firing';
  value: string;
}

export interface RunningPrometheus {
  url: string;
  /** Replaces the scrape targets. */
  setTargets(targets: readonly ScrapeTarget[]): void;
  /** An instant query; a scalar answer is one sample without labels. */
  query(expr: string): Promise<Sample[]>;
  /** Active alerts (pending and firing). */
  alerts(): Promise<Alert[]>;
  close(): Promise<void>;
}

export async function startPrometheus(options: PrometheusOptions): Promise<RunningPrometheus> {
  const dir = mkdtempSync(join(tmpdir(), 'dw-prometheus-'));
  const targetsFile = join(dir, 'targets.json');
  const setTargets = (targets: readonly ScrapeTarget[]) => {
    // Written whole and renamed into place: Prometheus never reads half a file.
    writeFileSync(`${targetsFile}.tmp`, JSON.stringify(targets.map((t) => ({ targets: [t.address], labels: t.labels }))));
    renameSync(`${targetsFile}.tmp`, targetsFile);
  };
  setTargets([]);
  // JSON is YAML: the config needs no YAML writer.
  const config = {
    global: {
      scrape_interval: `${options.scrapeIntervalSeconds}s`,
      scrape_timeout: `${options.scrapeIntervalSeconds}s`,
      evaluation_interval: `${options.evaluationIntervalSeconds}s`,
    },
    rule_files: options.ruleFiles,
    scrape_configs: [{ job_name: 'test', metrics_path: '/metrics', file_sd_configs: [{ files: [targetsFile], refresh_interval: '1s' }] }],
  };
  writeFileSync(join(dir, 'prometheus.yml'), JSON.stringify(config, null, 2));

  let child: ChildProcess | undefined;
  let url = '';
  let output = '';
  // A port found free can be taken before Prometheus binds it: try another one then.
  for (let attempt = 1; child === undefined; attempt++) {
    const port = await freePort();
    const started = spawn(
      options.binary,
      [
        `--config.file=${join(dir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
        '--log.level=warn',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    output = '';
    started.stdout!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    started.stderr!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    let exited = false;
    started.on('exit', () => (exited = true));
    const candidate = `http://127.0.0.1:${port}`;
    const ready = await waitFor(
      'prometheus /-/ready',
      async () => (exited ? 'exited' : (await fetch(`${candidate}/-/ready`).catch(() => undefined))?.ok === true && 'ready'),
      30_000,
      100,
    ).catch((err: unknown) => {
      started.kill('SIGKILL');
      throw new Error(`${(err as Error).message}\n${output}`);
    });
    if (ready === 'ready') {
      child = started;
      url = candidate;
    } else if (attempt >= 3 || !/address already in use/.test(output)) {
      throw new Error(`prometheus did not start:\n${output}`);
    }
  }

  const api = async (path: string): Promise<unknown> => {
    const response = await fetch(`${url}${path}`);
    const body = (await response.json()) as { status: string; data?: unknown; error?: string };
    if (body.status !== 'success') throw new Error(`prometheus ${path}: ${body.error ?? response.status}`);
    return body.data;
  };
  const running = child;
  return {
    url,
    setTargets,
    async query(expr) {
      const data = (await api(`/api/v1/query?query=${encodeURIComponent(expr)}`)) as { resultType: string; result: unknown };
      if (data.resultType === 'scalar') return [{ metric: {}, value: Number((data.result as [number, string])[1]) }];
      return (data.result as Array<{ metric: Record<string, string>; value: [number, string] }>).map((r) => ({ metric: r.metric, value: Number(r.value[1]) }));
    },
    async alerts() {
      return ((await api('/api/v1/alerts')) as { alerts: Alert[] }).alerts;
    },
    async close() {
      if (running.exitCode === null) {
        const exited = new Promise((resolve) => running.once('exit', resolve));
        running.kill('SIGTERM');
        const timer = setTimeout(() => running.kill('SIGKILL'), 10_000);
        await exited;
        clearTimeout(timer);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
