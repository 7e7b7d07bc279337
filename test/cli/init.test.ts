/**
 * `durable-worker init` writes a project that works as written: installed from a tarball of this
 * package (`npm pack`), offline, its `npm test` and `npm run check` pass. It never writes over a file.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { dependencySpec } from '../../src/cli/init-source.js';
import { REPO_ROOT, runCli } from './cli-process.js';
import { projectLock } from './offline-lock.js';
import { exec, npm, packThisPackage } from './pack-project.js';

/** One file of a .tgz, as text. */
async function tarEntry(tarball: string, path: string): Promise<string> {
  return (await exec('tar', ['-xzOf', tarball, path], { maxBuffer: 16 * 1024 * 1024 })).stdout;
}

describe('durable-worker init', () => {
  it('writes package.json, a handler, its test and .gitignore in an empty folder', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'dw-init-')), 'My Worker');
    const result = await runCli(['init', dir]);
    expect(result.code, result.stderr).toBe(0);
    expect(readdirSync(dir).sort()).toEqual(['.gitignore', 'handlers', 'package.json']);
    expect(readdirSync(join(dir, 'handlers')).sort()).toEqual(['entry-changes.js', 'entry-changes.test.js']);
    const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Record<string, Record<string, string>>;
    expect(pkg.name).toBe('my-worker');
    expect(pkg.type).toBe('module');
    expect(pkg.scripts).toEqual({ dev: 'durable-worker dev', test: 'vitest run', check: 'durable-worker check' });
    // Run from the clone: the project depends on the clone's folder (nothing is on the registry yet).
    expect(pkg.dependencies).toEqual({ 'durable-worker': `file:${relative(dir, REPO_ROOT)}` });
    expect(pkg.allowScripts).toMatchObject({ esbuild: true });
    expect(readFileSync(join(dir, '.gitignore'), 'utf8')).toContain('.durable-worker/');
    expect(result.stdout).toBe(
      `Wrote package.json, .gitignore, handlers/entry-changes.js, handlers/entry-changes.test.js in ${dir}\n\nNext:\n  cd '${dir}'\n  npm install\n  npm test\n  npm run dev -- --demo      # emulator + worker + console; a saved handler reloads\n`,
    );
  });

  it('--store postgres|redis and --otel add the driver and the SDK the project will run with', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dw-init-store-'));
    const own = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as Record<string, Record<string, string> | undefined>;
    const range = (name: string) => own.peerDependencies?.[name] ?? own.dependencies?.[name];
    const result = await runCli(['init', '--store', 'postgres', '--otel'], { cwd: dir });
    expect(result.code, result.stderr).toBe(0);
    const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    expect(Object.keys(pkg.dependencies).sort()).toEqual([
      '@opentelemetry/exporter-trace-otlp-proto',
      '@opentelemetry/resources',
      '@opentelemetry/sdk-trace-node',
      'durable-worker',
      'pg',
    ]);
    expect(pkg.dependencies.pg).toBe(range('pg'));
    expect(pkg.dependencies['@opentelemetry/sdk-trace-node']).toBe(range('@opentelemetry/sdk-trace-node'));
    expect(result.stdout).toContain('DURABLE_WORKER_IDEMPOTENCY=postgres://');

    const redis = await runCli(['init', '--store', 'redis', '--force'], { cwd: dir });
    expect(redis.code, redis.stderr).toBe(0);
    expect(Object.keys((JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { dependencies: object }).dependencies).sort()).toEqual([
      'durable-worker',
      'redis',
    ]);
    const bad = await runCli(['init', '--store', 'mongo', '--force'], { cwd: dir });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--store.*mongo/);
  });

  it('depends on the source it ran from: a file: tarball or folder, a git URL, a registry range', () => {
    const root = mkdtempSync(join(tmpdir(), 'dw-init-source-'));
    const project = join(root, 'apps', 'my-worker');
    // Not in a node_modules folder (a clone, an unpacked copy): that folder.
    expect(dependencySpec(join(root, 'durable-worker'), '1.2.3', project)).toBe('file:../../durable-worker');
    // Installed by npx or a project from a tarball: that tarball, relative to the new project.
    const installed = (spec: string | undefined) => {
      const owner = mkdtempSync(join(root, 'owner-'));
      mkdirSync(join(owner, 'node_modules', 'durable-worker'), { recursive: true });
      writeFileSync(join(owner, 'package.json'), JSON.stringify(spec === undefined ? {} : { dependencies: { 'durable-worker': spec } }));
      return { owner, root: join(owner, 'node_modules', 'durable-worker') };
    };
    const npx = installed(`file:${relative(mkdtempSync(join(root, 'cache-')), join(root, 'durable-worker-1.2.3.tgz'))}`);
    writeFileSync(
      join(npx.owner, 'package.json'),
      JSON.stringify({ dependencies: { 'durable-worker': `file:${relative(npx.owner, join(root, 'durable-worker-1.2.3.tgz'))}` } }),
    );
    expect(dependencySpec(npx.root, '1.2.3', project)).toBe('file:../../durable-worker-1.2.3.tgz');
    expect(dependencySpec(installed('^1.2.0').root, '1.2.3', project)).toBe('^1.2.3');
    expect(dependencySpec(installed('git+https://example.test/o/durable-worker.git').root, '1.2.3', project)).toBe(
      'git+https://example.test/o/durable-worker.git',
    );
    // A global install (no owning package.json): the installed folder.
    const global = installed(undefined);
    expect(dependencySpec(global.root, '1.2.3', project)).toBe(`file:${relative(project, global.root)}`);
  });

  it('refuses a folder holding a file it would write, naming it (exit 2, nothing written); --force overwrites', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dw-init-taken-'));
    writeFileSync(join(dir, 'package.json'), '{"name":"mine"}\n');
    const refused = await runCli(['init'], { cwd: dir });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toBe(`durable-worker: ${join(dir, 'package.json')} already exists: init writes nothing over a file (--force to overwrite it)\n`);
    expect(readdirSync(dir)).toEqual(['package.json']);
    expect(readFileSync(join(dir, 'package.json'), 'utf8')).toBe('{"name":"mine"}\n');

    const forced = await runCli(['init', '--force', '--typescript'], { cwd: dir });
    expect(forced.code, forced.stderr).toBe(0);
    expect(readdirSync(join(dir, 'handlers')).sort()).toEqual(['entry-changes.test.ts', 'entry-changes.ts']);
    expect(existsSync(join(dir, 'tsconfig.json'))).toBe(true);
    expect(JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'))).toMatchObject({ name: expect.stringMatching(/^dw-init-taken-/), type: 'module' });
  });

  it('a file where the folder should be is bad input (exit 2)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dw-init-file-'));
    writeFileSync(join(dir, 'x'), '');
    const result = await runCli(['init', 'x'], { cwd: dir });
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(`durable-worker: ${join(dir, 'x')} is not a folder\n`);
  });

  describe('installed from a tarball of this package, offline', () => {
    let tarball = '';
    beforeAll(async () => {
      tarball = await packThisPackage();
    }, 120_000);

    it.each([
      ['JavaScript', []],
      ['TypeScript', ['--typescript']],
    ] as const)(
      '%s: npm ci, npm test and npm run check pass in the project',
      async (_language, flags) => {
        const root = mkdtempSync(join(tmpdir(), 'dw-init-project-'));
        const dir = join(root, 'project');
        mkdirSync(dir);
        const result = await runCli(['init', ...flags], { cwd: dir });
        expect(result.code, result.stderr).toBe(0);
        // What `npm install ../durable-worker-<version>.tgz` writes, with the lockfile made from the repository's.
        const pkgPath = join(dir, 'package.json');
        const pkg = JSON.parse(readFileSync(pkgPath, 'utf8')) as {
          name: string;
          version: string;
          dependencies: Record<string, string>;
          devDependencies: Record<string, string>;
        };
        const spec = `file:../${tarball.split('/').pop()}`;
        writeFileSync(join(root, tarball.split('/').pop()!), readFileSync(tarball));
        pkg.dependencies['durable-worker'] = spec;
        writeFileSync(pkgPath, `${JSON.stringify(pkg, null, 2)}\n`);
        writeFileSync(join(dir, 'package-lock.json'), JSON.stringify(projectLock(pkg, spec, tarball), null, 2));

        // The packed manifest has no lifecycle script for the user's npm to approve (npm lists such
        // packages after an install); the dependencies' own (better-sqlite3's native build, for Node
        // 20's SQLite store) are skipped here: this project's test and check do not open a store.
        const packed = JSON.parse(await tarEntry(tarball, 'package/package.json')) as { scripts?: unknown };
        expect(packed.scripts).toBeUndefined();
        await npm(['ci', '--offline', '--ignore-scripts', '--no-audit', '--no-fund'], dir);
        expect(existsSync(join(dir, 'node_modules', 'durable-worker', 'dist', 'index.js'))).toBe(true);

        const test = await npm(['test'], dir);
        expect(test.stdout).toMatch(/1 passed/);
        const check = await npm(['run', 'check'], dir);
        expect(check.stdout).toContain('entry-changes');
        // TypeScript: check type-checks the handler with the project's typescript (no separate tsc).
        if (flags.length > 0) expect(check.stdout).toMatch(/note: types: 1 TypeScript handler\(s\) checked/);
      },
      240_000,
    );
  });
});
