/**
 * The hand-written references stay true to the code: every metric and label value the worker
 * exports is in docs/metrics.md, every alert docs/operations.md names exists, every local link resolves.
 */
import { EventEmitter } from 'node:events';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { METRIC_NAMES, createMetrics } from '../../src/observability/metrics.js';
import type { WorkerEmitter } from '../../src/observability/worker-events.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');

describe('docs/metrics.md', () => {
  const doc = read('docs/metrics.md');

  it('documents every durable_worker_ metric of a live registry, with its type', async () => {
    const metrics = createMetrics({ events: new EventEmitter() as WorkerEmitter, destination: 'd', collectDefaultMetrics: false });
    const exported = (await metrics.registry.getMetricsAsJSON()).filter((m) => m.name.startsWith('durable_worker_'));
    metrics.close();
    expect(exported.map((m) => m.name).sort()).toEqual(Object.values(METRIC_NAMES).sort());
    for (const metric of exported) {
      expect(doc, metric.name).toMatch(new RegExp(`\\| \`${metric.name}\` \\| ${metric.type} \\|`));
    }
  });

  it('explains every label value of outcome, pull status and ack status', () => {
    for (const value of ['ok', 'failed', 'duplicate', 'dead_lettered', '200', '204', '409', '429', '4xx', '5xx', 'error', 'committed', 'requeued', 'stale']) {
      expect(doc, value).toContain(`\`${value}\` (`);
    }
  });
});

describe('docs/operations.md', () => {
  it('names only alerts that exist in the Prometheus rules, and covers stale acks, lag and dead letters', () => {
    const doc = read('docs/operations.md');
    const rules = read('deploy/prometheus/durable-worker-rules.yaml');
    const named = [...doc.matchAll(/\[(DurableWorker\w+(?:, DurableWorker\w+)*)\]/g)].flatMap((m) => m[1]!.split(', '));
    expect(named.length).toBeGreaterThan(0);
    for (const alert of named) expect(rules, alert).toContain(`alert: ${alert}`);
    for (const heading of ['## Stale acks', '## Lag', '## Dead letters']) expect(doc).toContain(heading);
  });
});

describe('local links in README.md, docs/ and the examples', () => {
  // The developer docs (other docs/ files belong to their features' own tests).
  const files = [
    'README.md',
    ...['api', 'architecture', 'configuration', 'console', 'contributing', 'errors', 'metrics', 'operations'].map((f) => `docs/${f}.md`),
    ...readdirSync(join(ROOT, 'examples'))
      .map((d) => `examples/${d}/README.md`)
      .filter((f) => existsSync(join(ROOT, f))),
  ];

  it.each(files)('%s links only to files that exist', (file) => {
    const text = read(file);
    const targets = [...text.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!).filter((t) => !/^(https?:|mailto:|#)/.test(t));
    for (const target of targets) expect(existsSync(resolve(ROOT, dirname(file), target.split('#')[0]!)), `${file} -> ${target}`).toBe(true);
  });

  // The registry shows README.md outside the repository, where a relative link leads nowhere: its links
  // into the repository are absolute (package.json `repository`), and each names a file of this clone.
  it('README.md links into the repository by absolute URL, each to a file that exists', () => {
    const pkg = JSON.parse(read('package.json')) as { repository: { url: string }; homepage: string; bugs: { url: string } };
    const repo = pkg.repository.url.replace(/^git\+/, '').replace(/\.git$/, '');
    expect(pkg.homepage.startsWith(repo)).toBe(true);
    expect(pkg.bugs.url).toBe(`${repo}/issues`);
    const raw = repo.replace('https://github.com/', 'https://raw.githubusercontent.com/');
    const targets = [...read('README.md').matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!);
    const local = targets.filter((t) => !/^(https?:|mailto:|#)/.test(t));
    expect(local, 'relative links in README.md').toEqual([]);
    const intoRepo = targets.flatMap((t) => {
      const m = new RegExp(`^(?:${repo}/(?:blob|tree)/main/|${raw}/main/)([^#]+)`).exec(t);
      return m === null ? [] : [m[1]!];
    });
    expect(intoRepo.length).toBeGreaterThan(10);
    for (const path of intoRepo) expect(existsSync(join(ROOT, path)), `README.md -> ${path}`).toBe(true);
  });
});
