/**
 * The real deploy tools (helm, promtool): found on PATH or where .ci/deploy-tools.sh puts them.
 * Missing locally -> the suite is skipped with a printed reason; missing under CI -> it fails.
 */
import { spawnSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { underCi } from '../fixtures/ci.js';

export const REPO_ROOT = resolve(fileURLToPath(new URL('../..', import.meta.url)));
export const CHART_DIR = join(REPO_ROOT, 'helm', 'durable-worker');
/** The values every install needs (image, platform, consumer, credentials): the chart refuses to render without them. */
export const STANDALONE_VALUES = join(CHART_DIR, 'examples', 'standalone-values.yaml');

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Absolute path of `name`, or undefined. Also looks in $GOPATH/bin (helm built by `go install`). */
export function findTool(name: string): string | undefined {
  const dirs = (process.env.PATH ?? '').split(delimiter).filter(Boolean);
  dirs.push(join(process.env.GOPATH ?? join(homedir(), 'go'), 'bin'));
  for (const dir of dirs) {
    const candidate = join(dir, name);
    if (isExecutable(candidate)) return candidate;
  }
  return undefined;
}

export interface ToolGate {
  path: string | undefined;
  /** True when the suite should not run at all (missing locally, outside CI). */
  skip: boolean;
}

/** Under CI a missing tool is a failure (the suite runs and its first test fails), never a skip. */
export function toolGate(name: string, installHint: string): ToolGate {
  const path = findTool(name);
  const skip = path === undefined && !underCi();
  if (skip) console.warn(`[test/deploy] skipping ${name} checks: ${name} not found (${installHint})`);
  return { path, skip };
}

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

export function run(command: string, args: readonly string[], options: { cwd?: string; input?: string } = {}): RunResult {
  const result = spawnSync(command, args, { cwd: options.cwd ?? REPO_ROOT, input: options.input, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (result.error) throw result.error;
  return { code: result.status ?? -1, stdout: result.stdout, stderr: result.stderr };
}
