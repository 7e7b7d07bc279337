/**
 * `durable-worker init` writes a project that works as written: installed from a tarball of this
 * package (`npm pack`), offline, its `npm test` and `npm run check` pass. It never writes over a file.
 */
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, runCli } from './cli-process.js';
import { projectLock } from './offline-lock.js';

const exec = promisify(execFile);

/** npm as a user runs it in the project, without this test run's npm_* settings. */
async function npm(args: string[], cwd: string): Promise<{ stdout: string; stderr: string }> {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) if (!key.startsWith('npm_') && !key.startsWith('DURABLE_WORKER_') && key !== 'NODE_OPTIONS' && key !== 'VITEST' && !key.startsWith('VITEST_')) env[key] = value;
  try {
    return await exec('npm', args, { cwd, env: { ...env, NO_COLOR: '1' }, maxBuffer: 16 * 1024 * 1024 });
  } catch (err) {
    const e = err as Error & { stdout?: string; stderr?: string };
    throw new Error(`npm ${args.join(' ')} failed in ${cwd}: ${e.message}\n${e.stdout ?? ''}\n${e.stderr ?? ''}`);
  }
}

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
    expect(pkg.dependencies).toEqual({ 'durable-worker': `^${(JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version}` });
    expect(readFileSync(join(dir, '.gitignore'), 'utf8')).toContain('.durable-worker/');
    expect(result.stdout).toContain('npm run dev -- --demo');
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
      // dist/ is fresh (test/setup/fresh-dist.ts). Packed from a copy: the pack lifecycle rewrites
      // package.json for a moment (scripts/pack-manifest.mjs), which other test files read.
      const copy = mkdtempSync(join(tmpdir(), 'dw-pack-src-'));
      for (const path of ['package.json', 'README.md', 'bin', 'dist', 'handlers', 'src/console/page', 'scripts']) cpSync(join(REPO_ROOT, path), join(copy, path), { recursive: true });
      await exec(process.execPath, ['scripts/pack-manifest.mjs', 'strip'], { cwd: copy });
      const { stdout } = await npm(['pack', '--ignore-scripts', '--silent', '--pack-destination', copy], copy);
      tarball = join(copy, stdout.trim().split('\n').pop()!);
        }, 120_000);

    it.each([['JavaScript', []], ['TypeScript', ['--typescript']]] as const)('%s: npm ci, npm test and npm run check pass in the project', async (_language, flags) => {
      const root = mkdtempSync(join(tmpdir(), 'dw-init-project-'));
      const dir = join(root, 'project');
      mkdirSync(dir);
      const result = await runCli(['init', ...flags], { cwd: dir });
      expect(result.code, result.stderr).toBe(0);
      // What `npm install ../durable-worker-<version>.tgz` writes, with the lockfile made from the repository's.
      const pkgPath = join(dir, 'package.json');
      const pkg = JSON.parse(readFileSync(pkgPath, 'utf8')) as { name: string; version: string; dependencies: Record<string, string>; devDependencies: Record<string, string> };
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
    }, 240_000);
  });
});
