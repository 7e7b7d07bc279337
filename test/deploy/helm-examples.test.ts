/**
 * The chart as its examples and values document it: every example renders (and lints) with the very
 * command written in its own header; extra env, env sources, volumes and mounts sit under worker.*
 * (the old top-level extraVolumes still works, with a deprecation note); a startup probe; the state
 * folder on a PersistentVolumeClaim whenever the worker keeps state on its own disk.
 */
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { block, listItem, onlyDoc, splitManifests, type ManifestDoc } from './manifests.js';
import { CHART_DIR, REPO_ROOT, run, STANDALONE_VALUES, toolGate } from './tools.js';

const helm = toolGate('helm', 'bash .ci/deploy-tools.sh builds it with `go install helm.sh/helm/v3/cmd/helm@v3.16.4`');
const EXAMPLES = readdirSync(join(CHART_DIR, 'examples')).filter((name) => name.endsWith('.yaml'));
const scratch = mkdtempSync(join(tmpdir(), 'dw-helm-examples-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** The `helm install` command of an example's header comment, `\` continuations joined, as argv after `helm`. */
function headerInstall(file: string): string[] {
  const header = readFileSync(join(CHART_DIR, 'examples', file), 'utf8').split('\n');
  const lines: string[] = [];
  for (const line of header) {
    if (!line.startsWith('#')) break;
    lines.push(line.replace(/^#\s?/, ''));
  }
  const start = lines.findIndex((line) => /^\s*helm install /.test(line));
  if (start === -1) throw new Error(`${file}: no "helm install" command in its header`);
  let command = '';
  for (let i = start; i < lines.length; i++) {
    const line = lines[i]!.trim();
    command += ` ${line.replace(/\\$/, '')}`;
    if (!line.endsWith('\\')) break;
  }
  return command.trim().split(/\s+/).slice(1);
}

function helmOk(args: string[]): ManifestDoc[] {
  const result = run(helm.path!, args);
  if (result.code !== 0) throw new Error(`helm ${args.join(' ')} failed (${result.code}): ${result.stderr}`);
  return splitManifests(result.stdout);
}

/** `helm template` over the standalone example, with more arguments. */
function render(extra: string[]): ManifestDoc[] {
  return helmOk(['template', 'rel', CHART_DIR, '-f', STANDALONE_VALUES, ...extra]);
}

function worker(docs: ManifestDoc[]): string {
  return listItem(onlyDoc(docs, 'Deployment').text, 'name', 'durable-worker')!;
}

describe.skipIf(helm.skip)('chart examples render as their headers say', () => {
  it('helm is installed', () => {
    expect(helm.path, 'helm is missing: run bash .ci/deploy-tools.sh').toBeDefined();
  });

  it.each(EXAMPLES)('%s: the header command renders the workload; helm lint --strict with its values passes', (file) => {
    const install = headerInstall(file);
    expect(install[0]).toBe('install');
    // `helm install` without a cluster: `helm template`, same release, chart and values, from the repository root.
    const docs = helmOk(['template', ...install.slice(1)]);
    expect(onlyDoc(docs, 'Deployment').text).toContain('- name: durable-worker');
    const values = install.flatMap((arg, i) => (install[i - 1] === '-f' ? ['-f', join(REPO_ROOT, arg)] : []));
    const lint = run(helm.path!, ['lint', '--strict', CHART_DIR, ...values]);
    expect(lint.stdout + lint.stderr).toContain('1 chart(s) linted, 0 chart(s) failed');
  });
});

describe.skipIf(helm.skip)('worker.extraEnv, envFrom, extraVolumes and extraVolumeMounts', () => {
  it('all four reach the pod and the worker container', () => {
    const docs = render([
      '--set-json',
      'worker.envFrom=[{"secretRef":{"name":"otel-headers"}}]',
      '--set-json',
      'worker.extraVolumes=[{"name":"extra","configMap":{"name":"extra-files"}}]',
      '--set-json',
      'worker.extraVolumeMounts=[{"name":"extra","mountPath":"/etc/extra","readOnly":true}]',
      '--set-json',
      'worker.extraEnv=[{"name":"EXTRA","value":"1"}]',
    ]);
    const container = worker(docs);
    expect(block(container, 'envFrom')).toMatch(/- secretRef:\n\s+name: otel-headers/);
    expect(listItem(container, 'name', 'EXTRA')).toMatch(/value: "1"/);
    expect(block(container, 'volumeMounts')).toMatch(/- mountPath: \/etc\/extra\n\s+name: extra/);
    expect(block(onlyDoc(docs, 'Deployment').text, 'volumes')).toMatch(/- configMap:\n\s+name: extra-files\n\s+name: extra/);
  });

  it('the deprecated top-level extraVolumes still reaches the pod, after worker.extraVolumes, and the notes say to move it', () => {
    const values = ['--set-json', 'extraVolumes=[{"name":"old","emptyDir":{}}]', '--set-json', 'worker.extraVolumes=[{"name":"new","emptyDir":{}}]'];
    const volumes = block(onlyDoc(render(values), 'Deployment').text, 'volumes')!;
    expect(volumes.indexOf('name: new')).toBeGreaterThan(-1);
    expect(volumes.indexOf('name: old')).toBeGreaterThan(volumes.indexOf('name: new'));
    // NOTES.txt renders only at install: rendered here through a ConfigMap of a copy of the chart.
    const copy = join(scratch, 'notes-chart');
    cpSync(CHART_DIR, copy, { recursive: true });
    cpSync(join(copy, 'templates', 'NOTES.txt'), join(copy, 'notes.txt'));
    writeFileSync(
      join(copy, 'templates', 'notes-render.yaml'),
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: notes\ndata:\n  notes: |\n{{ tpl (.Files.Get "notes.txt") . | indent 4 }}\n',
    );
    const notes = (extra: string[]) =>
      run(helm.path!, ['template', 'rel', copy, '--show-only', 'templates/notes-render.yaml', '-f', STANDALONE_VALUES, ...extra]).stdout;
    expect(notes(values)).toContain('DEPRECATED: top-level extraVolumes is still honoured; move it to worker.extraVolumes');
    expect(notes([])).not.toContain('DEPRECATED');
  });
});

describe.skipIf(helm.skip)('startup probe', () => {
  it('/healthz holds liveness and readiness back for up to 60 s of start-up; it can be turned off', () => {
    const probe = block(worker(render([])), 'startupProbe')!;
    expect(probe).toMatch(/path: \/healthz/);
    expect(probe).toMatch(/periodSeconds: 2/);
    expect(probe).toMatch(/failureThreshold: 30/);
    expect(probe).not.toMatch(/enabled/);
    expect(block(worker(render(['--set', 'probes.startup.enabled=false'])), 'startupProbe')).toBeUndefined();
  });
});

describe.skipIf(helm.skip)('the state folder', () => {
  const claimOf = (docs: ManifestDoc[]) =>
    /- name: durable-worker-state\n\s+persistentVolumeClaim:\n\s+claimName: (\S+)/.exec(onlyDoc(docs, 'Deployment').text)?.[1];
  const strategy = (docs: ManifestDoc[]) => /^ {2}strategy:\n {4}type: (\S+)/m.exec(onlyDoc(docs, 'Deployment').text)?.[1];

  it('with the SQLite store (the default): a claim the chart creates, kept on uninstall, and the Recreate strategy', () => {
    const docs = render([]);
    const pvc = onlyDoc(docs, 'PersistentVolumeClaim');
    expect(pvc.name).toBe('rel-durable-worker-state');
    expect(pvc.text).toMatch(/helm\.sh\/resource-policy: keep/);
    expect(pvc.text).toMatch(/storage: "1Gi"/);
    expect(claimOf(docs)).toBe('rel-durable-worker-state');
    expect(strategy(docs)).toBe('Recreate');
  });

  it('an existing claim is used, not created; size and class are the values', () => {
    const existing = render(['--set', 'persistence.existingClaim=orders-state']);
    expect(existing.some((d) => d.kind === 'PersistentVolumeClaim')).toBe(false);
    expect(claimOf(existing)).toBe('orders-state');
    const sized = onlyDoc(
      render(['--set', 'persistence.size=5Gi,persistence.storageClassName=fast,persistence.keepOnUninstall=false']),
      'PersistentVolumeClaim',
    ).text;
    expect(sized).toMatch(/storageClassName: "fast"/);
    expect(sized).toMatch(/storage: "5Gi"/);
    expect(sized).not.toMatch(/resource-policy/);
  });

  it('with a shared store and sink: an emptyDir, no claim, the default rolling update', () => {
    const docs = render(['--set', 'worker.idempotency=redis://redis:6379']);
    expect(docs.some((d) => d.kind === 'PersistentVolumeClaim')).toBe(false);
    expect(onlyDoc(docs, 'Deployment').text).toMatch(/- name: durable-worker-state\n\s+emptyDir: \{\}/);
    expect(strategy(docs)).toBeUndefined();
  });

  it('a memory store with the default file sink keeps its dead letters on a claim', () => {
    expect(claimOf(render(['--set', 'worker.idempotency=memory']))).toBe('rel-durable-worker-state');
  });

  it('refuses the SQLite store on an emptyDir, naming the values, unless allowEphemeralState', () => {
    const refused = run(helm.path!, ['template', 'rel', CHART_DIR, '-f', STANDALONE_VALUES, '--set', 'persistence.enabled=false']);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('on an emptyDir (persistence.enabled=false) would lose its done marks, attempt counts and deferred runs');
    expect(refused.stderr).toContain('worker.allowEphemeralState=true');
    const accepted = render(['--set', 'persistence.enabled=false,worker.allowEphemeralState=true']);
    expect(accepted.some((d) => d.kind === 'PersistentVolumeClaim')).toBe(false);
    expect(onlyDoc(accepted, 'Deployment').text).toMatch(/- name: durable-worker-state\n\s+emptyDir: \{\}/);
  });
});
