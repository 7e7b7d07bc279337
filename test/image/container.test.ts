import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmodSync, cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { CHART_DIR, findTool, REPO_ROOT } from '../deploy/tools.js';
import { writeAtomicWriterVolume } from '../fixtures/kubelet-volume.js';
import { waitFor } from '../fixtures/wait-for.js';
import { consumerState, createConsumer, TENANT } from '../worker/harness.js';

/**
 * The container image of the Dockerfile, run as the Helm chart runs it: uid 10001, read-only root
 * filesystem, handlers mounted at /app/handlers. CI builds it first (`eval "$(bash .ci/image.sh)"`
 * exports DW_IMAGE, and CONTAINERS_CONF for this machine's runtime); without it the suite is
 * skipped locally and fails under CI. Every podman call is asynchronous: the emulator serving the
 * container lives in this process's event loop.
 */
const image = process.env.DW_IMAGE;
const podmanPath = findTool('podman');
const skip = (image === undefined || podmanPath === undefined) && !process.env.CI;
if (skip) console.warn('[test/image] skipping: no DW_IMAGE or no podman (build and export it with: eval "$(bash .ci/image.sh)")');

const run = promisify(execFile);

interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

async function podman(args: string[]): Promise<Result> {
  try {
    const { stdout, stderr } = await run(podmanPath ?? 'podman', args, { maxBuffer: 16 * 1024 * 1024 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const failed = err as { code?: number | string; stdout?: string; stderr?: string };
    if (typeof failed.code !== 'number') throw err;
    return { code: failed.code, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  }
}

/** The chart's default terminationGracePeriodSeconds: shutdown timeout + preStop sleep + margin (values.yaml). */
function chartGraceSeconds(): number {
  const values = readFileSync(join(CHART_DIR, 'values.yaml'), 'utf8');
  const number = (key: string) => Number(new RegExp(`^\\s+${key}: (\\d+)$`, 'm').exec(values)?.[1]);
  const grace = number('shutdownTimeoutSeconds') + number('preStopSleepSeconds') + number('terminationMarginSeconds');
  if (!Number.isInteger(grace)) throw new Error('values.yaml: no shutdownTimeoutSeconds / preStopSleepSeconds / terminationMarginSeconds');
  return grace;
}

/** One .js and one .ts handler, both importing `durable-worker`. */
const HANDLER_FILES: Record<string, string> = {
  'record.js': `import { defineHandler } from 'durable-worker';
export default defineHandler({
  type: 'image.*',
  async handle(event, ctx) {
    ctx.log.info({ subject: event.subject }, 'recorded');
  },
});
`,
  'slow.ts': `import { setTimeout as sleep } from 'node:timers/promises';
import { defineHandler } from 'durable-worker';

interface SlowData {
  delayMs: number;
}

export default defineHandler({
  type: 'image.slow',
  async handle(event, ctx) {
    const { delayMs } = event.data as SlowData;
    await sleep(delayMs, undefined, { signal: ctx.signal });
  },
});
`,
};

/** A handlers folder as a user mounts it: plain files, or the kubelet's ConfigMap layout (links into `..data`). */
function handlersFolder(layout: 'plain' | 'configMap' = 'plain'): string {
  const dir = mkdtempSync(join(tmpdir(), 'dw-image-handlers-'));
  chmodSync(dir, 0o755); // mkdtemp makes it 0700: the container's uid 10001 must read it, as a ConfigMap mount allows
  if (layout === 'configMap') writeAtomicWriterVolume(dir, HANDLER_FILES);
  else for (const [name, content] of Object.entries(HANDLER_FILES)) writeFileSync(join(dir, name), content);
  return dir;
}

/** A figure of the size table of docs/kubernetes.md, in bytes, by the start of its first cell. */
function documentedSize(doc: string, label: string): number {
  const row = doc.split('\n').find((line) => line.startsWith(`| ${label}`));
  const mb = row === undefined ? undefined : /\|\s*\**([\d.]+) MB\**\s*\|\s*$/.exec(row)?.[1];
  if (mb === undefined) throw new Error(`docs/kubernetes.md: no size row starting with "| ${label}"`);
  return Number(mb) * 1e6;
}

describe.skipIf(skip)('container image', () => {
  const version = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
  let handlers: string;
  let configMapHandlers: string;
  let emulator: RunningEmulator;
  const containers: string[] = [];

  beforeAll(async () => {
    handlers = handlersFolder();
    configMapHandlers = handlersFolder('configMap');
    emulator = await startEmulator({ port: 0 });
  });
  afterAll(async () => {
    for (const name of containers) await podman(['rm', '--force', '--volumes', name]);
    await emulator?.close();
    rmSync(handlers, { recursive: true, force: true });
    rmSync(configMapHandlers, { recursive: true, force: true });
  });

  it('is built (CI: eval "$(bash .ci/image.sh)") and podman is installed', () => {
    expect(podmanPath, 'podman on PATH').toBeDefined();
    expect(image, 'DW_IMAGE').toBeDefined();
  });

  it('runs durable-worker behind tini as uid 10001, with its state in a volume and OCI labels', async () => {
    const inspected = await podman(['image', 'inspect', image!]);
    expect(inspected.code, inspected.stderr).toBe(0);
    const [{ Config: config }] = JSON.parse(inspected.stdout) as [
      { Config: { User: string; Entrypoint: string[]; Volumes: Record<string, unknown>; Labels: Record<string, string>; WorkingDir: string } },
    ];
    expect(config.User).toBe('10001:10001');
    expect(config.Entrypoint).toEqual(['/usr/bin/tini', '--', 'durable-worker']);
    expect(config.WorkingDir).toBe('/app');
    expect(Object.keys(config.Volumes)).toEqual(['/var/lib/durable-worker']);
    expect(config.Labels).toMatchObject({
      'org.opencontainers.image.title': 'durable-worker',
      'org.opencontainers.image.version': version,
      'org.opencontainers.image.licenses': 'MIT',
    });
  });

  it('--help, read-only', async () => {
    const help = await podman(['run', '--rm', '--read-only', image!, '--help']);
    expect(help.code, help.stderr).toBe(0);
    expect(help.stdout).toMatch(/durable-worker run/);
  }, 60_000);

  it('check loads a mounted handlers folder, .js and .ts, resolving durable-worker from the image', async () => {
    const check = await podman(['run', '--rm', '--read-only', '-v', `${handlers}:/app/handlers:ro`, image!, 'check']);
    expect(check.code, check.stdout + check.stderr).toBe(0);
    const output = check.stdout + check.stderr;
    expect(output).toMatch(/record/);
    expect(output).toMatch(/slow/);
    expect(output).toMatch(/image\.slow/);
  }, 60_000);

  it('check loads the handlers mounted as the kubelet mounts a ConfigMap (KEY -> ..data/KEY, ..data -> ..<timestamp>/)', async () => {
    const check = await podman(['run', '--rm', '--read-only', '-v', `${configMapHandlers}:/app/handlers:ro`, image!, 'check']);
    expect(check.code, check.stdout + check.stderr).toBe(0);
    const output = check.stdout + check.stderr;
    expect(output).toMatch(/record/);
    expect(output).toMatch(/image\.slow/);
  }, 60_000);

  it('has the sizes docs/kubernetes.md gives, within 5% or 0.5 MB (the page is measured, not typed)', async () => {
    const doc = readFileSync(join(REPO_ROOT, 'docs', 'kubernetes.md'), 'utf8');
    const inContainer = async (script: string) => {
      const result = await podman(['run', '--rm', '--read-only', '--entrypoint', 'sh', image!, '-c', script]);
      expect(result.code, result.stderr).toBe(0);
      return Number(result.stdout.trim());
    };
    const inspect = async (name: string) => Number((await podman(['image', 'inspect', '--format', '{{.Size}}', name])).stdout.trim());
    const base = (await podman(['image', 'inspect', '--format', '{{index .Labels "org.opencontainers.image.base.name"}}', image!])).stdout.trim();
    const measured: Array<[string, number]> = [
      ['Debian bookworm', await inspect(base)],
      [
        'tini and Debian',
        1024 * (await inContainer("dpkg-query -W -f='${Installed-Size}\\n' tini ca-certificates openssl libssl3 | awk '{ s += $1 } END { print s }'")),
      ],
      ['`node`', await inContainer('stat -c %s /usr/local/bin/node')],
      ['production dependencies', await inContainer('du -sb /app/node_modules/durable-worker/node_modules | cut -f1')],
      ['the package', await inContainer('du -sb --exclude=node_modules /app/node_modules/durable-worker | cut -f1')],
      ["Node's compile cache", await inContainer('du -sb /app/.cache | cut -f1')],
      ['**total**', await inspect(image!)],
    ];
    const report = measured.map(([label, bytes]) => `${label}: ${(bytes / 1e6).toFixed(1)} MB`).join(', ');
    for (const [label, bytes] of measured) {
      const documented = documentedSize(doc, label);
      // Small rows move with every change of code: half a megabyte of slack there, 5 % elsewhere.
      expect(Math.abs(documented - bytes), `${label}: documented ${documented / 1e6} MB; measured ${report}`).toBeLessThanOrEqual(
        Math.max(0.05 * bytes, 0.5e6),
      );
    }
  }, 120_000);

  it('the derived image of docs/kubernetes.md builds on it and loads the handlers baked in', async () => {
    const doc = readFileSync(join(REPO_ROOT, 'docs', 'kubernetes.md'), 'utf8');
    const derived = /^```dockerfile\n([\s\S]*?)^```/m.exec(doc)?.[1] ?? '';
    expect(derived).toMatch(/^FROM \S+\nCOPY handlers\/ \/app\/handlers\/\n$/);
    const context = mkdtempSync(join(tmpdir(), 'dw-image-derived-'));
    cpSync(handlers, join(context, 'handlers'), { recursive: true });
    writeFileSync(join(context, 'Dockerfile.worker'), derived.replace(/^FROM \S+/, `FROM ${image}`));
    const tag = `localhost/dw-derived-${randomUUID().slice(0, 8)}:test`;
    try {
      const built = await podman(['build', '--pull=never', '--network', 'host', '--tag', tag, '--file', join(context, 'Dockerfile.worker'), context]);
      expect(built.code, built.stdout + built.stderr).toBe(0);
      const check = await podman(['run', '--rm', '--read-only', tag, 'check']);
      expect(check.code, check.stdout + check.stderr).toBe(0);
      expect(check.stdout + check.stderr).toMatch(/slow/);
    } finally {
      await podman(['rmi', '--force', tag]);
      rmSync(context, { recursive: true, force: true });
    }
  }, 300_000);

  it('run against the emulator on the host: processes events with its SQLite store, serves /metrics, drains on podman stop within the chart grace period, exit 0', async () => {
    const destination = await createConsumer(emulator, 'image');
    const fast = emulator.appendEvents(
      TENANT,
      Array.from({ length: 100 }, (_, i) => ({ type: 'image.fast', subject: `s-${i % 10}`, data: { i } })),
    );
    const name = `dw-image-${randomUUID().slice(0, 8)}`;
    containers.push(name);
    const started = await podman([
      'run',
      '--detach',
      '--name',
      name,
      '--network',
      'host',
      '--read-only',
      '-v',
      `${handlers}:/app/handlers:ro`,
      '-e',
      'DURABLE_WORKER_CLIENT_SECRET=dev-secret',
      image!,
      'run',
      '--base-url',
      emulator.url,
      '--tenant',
      TENANT,
      '--client-id',
      'dev-client',
      '--destination',
      destination,
      '--metrics-port',
      '0',
      '--metrics-host',
      '127.0.0.1',
      '--limit',
      '20',
      '--concurrency',
      '8',
    ]);
    expect(started.code, started.stderr).toBe(0);
    const logs = async () => {
      const result = await podman(['logs', name]);
      return result.stdout + result.stderr;
    };

    const metricsUrl = await waitFor('the metrics URL in the logs', async () => /metrics at (http:\/\/\S+\/metrics)/.exec(await logs())?.[1], 60_000, 250);
    const head = fast.at(-1)!.sequence;
    await waitFor('the first events committed', () => consumerState(emulator, destination).committed === head, 60_000, 100);
    const metrics = await (await fetch(metricsUrl)).text();
    expect(metrics).toMatch(/^durable_worker_events_total\{type="image\.fast",outcome="ok"\} 100$/m);

    const uid = await podman(['exec', name, 'id', '-u']);
    expect(uid.stdout.trim()).toBe('10001');
    // The default store, sqlite:.durable-worker/idempotency.sqlite, lives in the state volume.
    const store = await podman(['exec', name, 'ls', '/var/lib/durable-worker']);
    expect(store.stdout).toMatch(/idempotency\.sqlite/);

    // Events in hand when the stop comes: each takes 400 ms, 8 at a time.
    emulator.appendEvents(
      TENANT,
      Array.from({ length: 60 }, (_, i) => ({ type: 'image.slow', subject: `slow-${i}`, data: { delayMs: 400 } })),
    );
    await waitFor('a batch of slow events leased', () => consumerState(emulator, destination).leased > 0, 30_000, 20);
    // SIGTERM to tini, forwarded to the worker; SIGKILL (exit 137) if it has not exited within the grace period.
    const stopped = await podman(['stop', '--time', String(chartGraceSeconds()), name]);
    expect(stopped.code, stopped.stderr).toBe(0);
    const state = await podman(['inspect', '--format', '{{.State.ExitCode}}', name]);
    expect(state.stdout.trim(), await logs()).toBe('0');
    // Drained: the batches in hand were acked (finished events ok, the rest failed for redelivery).
    expect(consumerState(emulator, destination).leased).toBe(0);
    expect(await logs()).not.toMatch(/dev-secret/);
  }, 180_000);
});
