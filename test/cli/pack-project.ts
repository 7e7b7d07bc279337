/** This package as a user gets it (`npm pack`), and npm as a user runs it in a project. */
import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT } from './cli-process.js';

export const exec = promisify(execFile);

/** The environment of a user's shell: without this test run's npm_*, DURABLE_WORKER_* and vitest settings. */
export function userEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env))
    if (!key.startsWith('npm_') && !key.startsWith('DURABLE_WORKER_') && key !== 'NODE_OPTIONS' && key !== 'VITEST' && !key.startsWith('VITEST_'))
      env[key] = value;
  return { ...env, NO_COLOR: '1' };
}

/** npm as a user runs it in the project. */
export async function npm(args: string[], cwd: string): Promise<{ stdout: string; stderr: string }> {
  try {
    return await exec('npm', args, { cwd, env: userEnv(), maxBuffer: 16 * 1024 * 1024 });
  } catch (err) {
    const e = err as Error & { stdout?: string; stderr?: string };
    throw new Error(`npm ${args.join(' ')} failed in ${cwd}: ${e.message}\n${e.stdout ?? ''}\n${e.stderr ?? ''}`);
  }
}

/**
 * `npm pack` of this package, as the tarball's path. dist/ is fresh (test/setup/fresh-dist.ts).
 * Packed from a copy: the pack lifecycle rewrites package.json for a moment
 * (scripts/pack-manifest.mjs), which other test files read.
 */
export async function packThisPackage(): Promise<string> {
  const copy = mkdtempSync(join(tmpdir(), 'dw-pack-src-'));
  for (const path of ['package.json', 'README.md', 'bin', 'dist', 'handlers', 'src/console/page', 'scripts'])
    cpSync(join(REPO_ROOT, path), join(copy, path), { recursive: true });
  await exec(process.execPath, ['scripts/pack-manifest.mjs', 'strip'], { cwd: copy });
  const { stdout } = await npm(['pack', '--ignore-scripts', '--silent', '--pack-destination', copy], copy);
  return join(copy, stdout.trim().split('\n').pop()!);
}
