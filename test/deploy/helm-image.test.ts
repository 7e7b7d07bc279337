import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { block, listItem, onlyDoc, splitManifests, type ManifestDoc } from './manifests.js';
import { CHART_DIR, REPO_ROOT, run, STANDALONE_VALUES, toolGate } from './tools.js';

/**
 * The chart runs the image the Dockerfile builds: same name and version, the image's entrypoint
 * (tini, so SIGTERM drains), and the uid, handlers path and state dir the image was made for.
 */
const helm = toolGate('helm', 'bash .ci/deploy-tools.sh builds it with `go install helm.sh/helm/v3/cmd/helm@v3.16.4`');
const dockerfile = readFileSync(join(REPO_ROOT, 'Dockerfile'), 'utf8');
const packageVersion = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version;

function render(args: string[] = []): ManifestDoc[] {
  const result = run(helm.path!, ['template', 'rel', CHART_DIR, '--namespace', 'jobs', '-f', STANDALONE_VALUES, ...args]);
  if (result.code !== 0) throw new Error(`helm template failed (${result.code}): ${result.stderr}`);
  return splitManifests(result.stdout);
}

function workerContainer(docs: ManifestDoc[]): string {
  const container = listItem(onlyDoc(docs, 'Deployment').text, 'name', 'durable-worker');
  if (container === undefined) throw new Error('no durable-worker container');
  return container;
}

/** The value of `INSTRUCTION ...` in the Dockerfile's runtime stage (after its last FROM). */
function runtimeStage(): string {
  return dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
}

describe.skipIf(helm.skip)('helm chart: the image', () => {
  const docs = helm.path ? render() : [];

  it('defaults to the tag of the image this repository builds: the package version', () => {
    const chart = readFileSync(join(CHART_DIR, 'Chart.yaml'), 'utf8');
    expect(/^appVersion: "(.+)"$/m.exec(chart)?.[1]).toBe(packageVersion);
    expect(/^ARG VERSION=(.+)$/m.exec(dockerfile)?.[1]).toBe(packageVersion);
    expect(workerContainer(docs)).toMatch(
      new RegExp(`^\\s+image: "registry\\.example\\.com/team/durable-worker:${packageVersion.replace(/\./g, '\\.')}"$`, 'm'),
    );
  });

  it("runs the image's entrypoint (tini, then the CLI): no command, args from `run`", () => {
    const container = workerContainer(docs);
    expect(runtimeStage()).toMatch(/^ENTRYPOINT \["\/usr\/bin\/tini", "--", "durable-worker"\]$/m);
    expect(block(container, 'command')).toBeUndefined();
    expect(block(container, 'args')).toMatch(/^\s+- run$/m);
  });

  it("matches the image's user, handlers folder and state volume", () => {
    const deployment = onlyDoc(docs, 'Deployment').text;
    const [, uid, gid] = /^USER (\d+):(\d+)$/m.exec(runtimeStage()) ?? [];
    expect(deployment).toMatch(new RegExp(`^\\s+runAsUser: ${uid}$`, 'm'));
    expect(deployment).toMatch(new RegExp(`^\\s+runAsGroup: ${gid}$`, 'm'));
    expect(runtimeStage()).toMatch(/mkdir -p \/app\/handlers /);
    expect(block(workerContainer(docs), 'args')).toMatch(/- --handlers\n\s+- "\/app\/handlers"/);
    expect(runtimeStage()).toMatch(/^VOLUME \/var\/lib\/durable-worker$/m);
    expect(block(workerContainer(docs), 'volumeMounts')).toMatch(/mountPath: \/var\/lib\/durable-worker$/m);
  });

  it('takes a registry image and tag, and a command for an image whose entrypoint is not the CLI', () => {
    const pushed = workerContainer(render(['--set', 'image.repository=registry.example.com/team/orders-worker,image.tag=1.4.2']));
    expect(pushed).toMatch(/^\s+image: "registry\.example\.com\/team\/orders-worker:1\.4\.2"$/m);
    const digest = `sha256:${'0123456789abcdef'.repeat(4)}`;
    const pinned = workerContainer(render(['--set', `image.repository=registry.example.com/team/orders-worker,image.tag=1.4.2,image.digest=${digest}`]));
    expect(pinned).toMatch(new RegExp(`^\\s+image: "registry\\.example\\.com/team/orders-worker@${digest}"$`, 'm'));
    const other = workerContainer(render(['--set', 'image.command={durable-worker}']));
    expect(block(other, 'command')).toMatch(/^\s+- durable-worker$/m);
  });
});
