/**
 * The package as a user installs it: packed as `npm publish` packs it, installed from the tarball into
 * an empty project, loaded by ES and CommonJS callers, and weighed. The packed files pass publint
 * (strict) and Are the Types Wrong (node16 profile: the node10 resolution ignores `exports`, so no
 * subpath such as `durable-worker/testing` resolves there, and no Node that old runs this package).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../cli/cli-process.js';
import { exec, installTarball, packProject, userEnv, userExec } from './pack.js';

/** The base install's ceiling: what `npm install durable-worker` adds to a project. */
const MAX_INSTALL_BYTES = 30 * 1024 * 1024;

/**
 * Bytes of the files under `dir` (apparent sizes, the same on every file system; a file hard-linked
 * twice counted once, as `du` does: esbuild's install links its binary into esbuild/bin) and the packages in it.
 */
function weigh(dir: string): { bytes: number; packages: number } {
  let bytes = 0;
  let packages = 0;
  const seen = new Set<number>();
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const stats = statSync(join(entry.parentPath, entry.name));
    if (!seen.has(stats.ino)) bytes += stats.size;
    seen.add(stats.ino);
    if (entry.name === 'package.json' && /node_modules\/(@[^/]+\/)?[^/@]+$/.test(entry.parentPath)) packages += 1;
  }
  return { bytes, packages };
}

const bin = (name: string) => join(REPO_ROOT, 'node_modules', '.bin', name);

describe('the published package', () => {
  let tarball = '';
  let project = '';
  beforeAll(async () => {
    tarball = await packProject();
    project = await installTarball(tarball);
  }, 240_000);

  it('packs the license and no source maps (their sources are not packed)', async () => {
    const files = (await exec('tar', ['-tzf', tarball], { maxBuffer: 16 * 1024 * 1024 })).stdout.split('\n');
    expect(files).toContain('package/LICENSE');
    expect(files.filter((file) => file.endsWith('.map'))).toEqual([]);
  });

  it('passes publint --strict', async () => {
    const { stdout } = await userExec(bin('publint'), ['run', tarball, '--strict'], REPO_ROOT);
    expect(stdout).toContain('All good!');
  }, 60_000);

  it('passes Are the Types Wrong for every entry point, ES and CommonJS callers (node10 aside)', async () => {
    // Exits 0 with the node16 profile; its JSON still lists the node10 problems it ignores.
    const { stdout } = await userExec(bin('attw'), [tarball, '--profile', 'node16', '--format', 'json'], REPO_ROOT);
    const { analysis } = JSON.parse(stdout) as {
      analysis: { entrypoints: Record<string, unknown>; problems: { kind: string; entrypoint: string; resolutionKind?: string }[] };
    };
    expect(Object.keys(analysis.entrypoints).sort()).toEqual(['.', './client', './emulator', './package.json', './testing', './worker']);
    expect(analysis.problems.filter((problem) => problem.resolutionKind !== 'node10')).toEqual([]);
  }, 60_000);

  it('loads with import and with require, one module instance for both', async () => {
    const script = [
      "const dw = require('durable-worker');",
      "const testing = require('durable-worker/testing');",
      "const rooms = ['worker', 'client', 'emulator'].map((room) => require('durable-worker/' + room));",
      'import("durable-worker").then(async (esm) => {',
      "  const esmTesting = await import('durable-worker/testing');",
      "  const [worker, client, emulator] = await Promise.all(['worker', 'client', 'emulator'].map((room) => import('durable-worker/' + room)));",
      '  console.log(JSON.stringify({',
      '    require: typeof dw.defineHandler, requireTesting: typeof testing.runHandler,',
      '    same: esm.PermanentError === dw.PermanentError && esmTesting.runHandler === testing.runHandler,',
      // A room's names are the package entry's aliases: the same functions, by import and by require.
      '    rooms: worker.startWorker === rooms[0].startWorker && worker.startWorker === esm.startWorker && client.createClient === rooms[1].createClient && emulator.startEmulator === esm.startEmulator,',
      '  }));',
      '});',
    ].join('\n');
    const cjs = await userExec(process.execPath, ['--input-type=commonjs', '-e', script], project);
    expect(JSON.parse(cjs.stdout)).toEqual({ require: 'function', requireTesting: 'function', same: true, rooms: true });
    const esm = await userExec(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        "import { defineHandler } from 'durable-worker'; import { runHandler } from 'durable-worker/testing'; console.log(typeof defineHandler, typeof runHandler);",
      ],
      project,
    );
    expect(esm.stdout.trim()).toBe('function function');
  });

  it(`installs in at most ${MAX_INSTALL_BYTES / 1024 / 1024} MB, without the optional stores' and tracing's packages`, () => {
    const { bytes, packages } = weigh(join(project, 'node_modules'));
    console.info(`base install: ${(bytes / 1024 / 1024).toFixed(1)} MB, ${packages} packages`);
    expect(bytes).toBeLessThanOrEqual(MAX_INSTALL_BYTES);
    // Optional peers (package.json peerDependenciesMeta): installed by those who use them.
    for (const optional of ['pg', 'redis', '@opentelemetry/sdk-trace-node', '@opentelemetry/exporter-trace-otlp-proto', 'better-sqlite3']) {
      expect(existsSync(join(project, 'node_modules', optional)), optional).toBe(false);
    }
  });

  // Slim by default: a configuration that needs an optional package says which, at start-up (exit 2, one line).
  it.each([
    [['--idempotency', 'postgres://app:s3cret@127.0.0.1:1/app'], '--idempotency postgres:// needs pg, which is not installed: npm install pg@'],
    [['--dead-letter', 'redis://:s3cret@127.0.0.1:1/0'], '--dead-letter redis:// needs redis, which is not installed: npm install redis@'],
    [
      ['--otel'],
      '--otel needs @opentelemetry/sdk-trace-node and @opentelemetry/resources, which are not installed: npm install @opentelemetry/sdk-trace-node@',
    ],
  ])(
    'run %j without the package it needs: exit 2 naming it',
    async (flags, message) => {
      const args = ['run', '--base-url', 'http://127.0.0.1:1', '--destination', 'd', '--api-key', 'k', '--metrics-port', '0', ...flags];
      const failed = spawnSync(join(project, 'node_modules', '.bin', 'durable-worker'), args, {
        cwd: project,
        env: userEnv(),
        encoding: 'utf8',
        timeout: 20_000,
      });
      expect(failed.status, failed.stderr).toBe(2);
      expect(failed.stderr.trim().split('\n')).toHaveLength(1);
      expect(failed.stderr).toContain(`durable-worker: ${message}`);
      expect(failed.stderr).not.toContain('s3cret');
    },
    30_000,
  );

  it("the bin keeps Node's compile cache and hands its folder to what it starts (handler threads, child processes)", () => {
    const handlers = join(project, 'cache-probe');
    mkdirSync(handlers);
    const seen = join(project, 'compile-cache.txt');
    writeFileSync(
      join(handlers, 'probe.mjs'),
      `import { writeFileSync } from 'node:fs';\nimport { defineHandler } from 'durable-worker';\nwriteFileSync(${JSON.stringify(seen)}, process.env.NODE_COMPILE_CACHE ?? '');\nexport default defineHandler({ type: '*', async handle() {} });\n`,
    );
    const env = userEnv();
    delete env.NODE_COMPILE_CACHE;
    const checked = spawnSync(join(project, 'node_modules', '.bin', 'durable-worker'), ['check', '--handlers', handlers], {
      cwd: project,
      env: { ...env, TMPDIR: project },
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(checked.status, checked.stderr).toBe(0);
    // enableCompileCache() without a folder: <os temp folder>/node-compile-cache, filled when the process exits.
    expect(readFileSync(seen, 'utf8')).toBe(join(project, 'node-compile-cache'));
    expect(readdirSync(join(project, 'node-compile-cache'), { recursive: true }).length).toBeGreaterThan(10);
  });

  it('compiles nothing on install (no native module built: node:sqlite is built into Node)', () => {
    // Prebuilt binaries ship inside their packages (esbuild's, piscina's optional @napi-rs/nice); node-gyp would write build/.
    const built = readdirSync(join(project, 'node_modules'), { recursive: true, encoding: 'utf8' }).filter(
      (path) => /(^|\/)build\/(Release|Debug)$/.test(path) || path.endsWith('binding.gyp'),
    );
    expect(built).toEqual([]);
    const manifest = JSON.parse(readFileSync(join(project, 'node_modules', 'durable-worker', 'package.json'), 'utf8')) as { scripts?: unknown };
    expect(manifest.scripts).toBeUndefined();
  });
});
