/**
 * This package as a user gets it: `packProject()` packs a copy of the clone the way `npm publish`
 * does (the prepack manifest, dist/ as built), and `installTarball()` installs the tarball into an
 * empty project with `npm ci --offline`, from the npm cache that the clone's own `npm ci` filled
 * (test/cli/offline-lock.ts writes the project's lockfile from the clone's).
 */
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT } from '../cli/cli-process.js';
import { projectLock } from '../cli/offline-lock.js';

export const exec = promisify(execFile);

/** What `npm pack` packs (package.json `files`, and the files npm always takes). */
const PACKED = ['package.json', 'README.md', 'LICENSE', 'bin', 'dist', 'handlers', 'src/console/page', 'scripts'];

/** The environment a user's shell has: this one without the test run's npm_*, vitest, NODE_OPTIONS and DURABLE_WORKER_* settings. */
export function userEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { NO_COLOR: '1' };
  for (const [key, value] of Object.entries(process.env))
    if (!key.startsWith('npm_') && !key.startsWith('DURABLE_WORKER_') && key !== 'NODE_OPTIONS' && key !== 'VITEST' && !key.startsWith('VITEST_'))
      env[key] = value;
  return env;
}

/** A command as a user runs it in `cwd` (`userEnv()`); rejects with its output when it fails. */
export async function userExec(file: string, args: string[], cwd: string): Promise<{ stdout: string; stderr: string }> {
  try {
    return await exec(file, args, { cwd, env: userEnv(), maxBuffer: 16 * 1024 * 1024 });
  } catch (err) {
    const e = err as Error & { stdout?: string; stderr?: string };
    throw new Error(`${file} ${args.join(' ')} failed in ${cwd}: ${e.message}\n${e.stdout ?? ''}\n${e.stderr ?? ''}`);
  }
}

/** The tarball of this package, packed from a copy (the pack lifecycle rewrites package.json for a moment, which other test files read). */
export async function packProject(): Promise<string> {
  const copy = mkdtempSync(join(tmpdir(), 'dw-pack-src-'));
  for (const path of PACKED) cpSync(join(REPO_ROOT, path), join(copy, path), { recursive: true });
  await exec(process.execPath, ['scripts/pack-manifest.mjs', 'strip'], { cwd: copy });
  const { stdout } = await userExec('npm', ['pack', '--ignore-scripts', '--silent', '--pack-destination', copy], copy);
  return join(copy, stdout.trim().split('\n').pop()!);
}

/**
 * A new project (in a fresh temp folder) that depends on the tarball alone, installed: what
 * `npm install ./durable-worker-<version>.tgz` makes, with install scripts allowed as a user's npm
 * runs them. Returns the project folder.
 */
export async function installTarball(tarball: string): Promise<string> {
  const root = mkdtempSync(join(tmpdir(), 'dw-install-'));
  const dir = join(root, 'project');
  mkdirSync(dir);
  writeFileSync(join(root, basename(tarball)), readFileSync(tarball));
  const spec = `file:../${basename(tarball)}`;
  const pkg = { name: 'dw-install', version: '1.0.0', private: true, dependencies: { 'durable-worker': spec }, devDependencies: {} };
  writeFileSync(join(dir, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`);
  writeFileSync(join(dir, 'package-lock.json'), JSON.stringify(projectLock(pkg, spec, tarball), null, 2));
  await userExec('npm', ['ci', '--offline', '--no-audit', '--no-fund'], dir);
  if (!existsSync(join(dir, 'node_modules', 'durable-worker', 'dist', 'index.js'))) throw new Error(`npm ci in ${dir} did not install durable-worker`);
  return dir;
}
