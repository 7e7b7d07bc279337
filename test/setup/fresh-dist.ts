/**
 * vitest globalSetup: `npx vitest run` alone never tests a stale `dist/`. Most suites import the
 * TypeScript sources, but some test the package as users get it: the bin (`bin/durable-worker.js`
 * runs `dist/cli`), `durable-worker/testing` in the examples, the entry's weight. Those read `dist/`,
 * so it is rebuilt here when a source is newer than what was compiled from it (or was never
 * compiled). `npm test` builds first, finds `dist/` fresh and does not build twice.
 *
 * Rebuilding rather than pointing those tests at the sources: the bin and the package exports are
 * what ships, and the compiled thread entry is what `--isolation thread` runs in production.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SRC = join(ROOT, 'src');
const DIST = join(ROOT, 'dist');
/** Settings that change every output when they change. */
const BUILD_CONFIG = ['tsconfig.json', 'tsconfig.build.json'].map((name) => join(ROOT, name));

function* typeScriptSources(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* typeScriptSources(path);
    else if (/\.[cm]?ts$/.test(entry.name) && !/\.d\.[cm]?ts$/.test(entry.name)) yield path;
  }
}

/** Why `dist/` must be rebuilt, or undefined when every output is newer than its source. */
export function staleReason(): string | undefined {
  const configMs = Math.max(...BUILD_CONFIG.map((path) => statSync(path).mtimeMs));
  for (const source of typeScriptSources(SRC)) {
    // tsc's outputs: .ts -> .js, .cts -> .cjs (CommonJS), .mts -> .mjs.
    const output = join(DIST, relative(SRC, source)).replace(/\.([cm]?)ts$/, '.$1js');
    if (!existsSync(output)) return `${relative(ROOT, output)} is missing`;
    const builtMs = statSync(output).mtimeMs;
    if (builtMs < statSync(source).mtimeMs) return `${relative(ROOT, source)} changed since it was compiled`;
    if (builtMs < configMs) return 'a tsconfig changed since the last build';
  }
  return undefined;
}

export default function setup(): void {
  const reason = staleReason();
  if (reason === undefined) return;
  console.info(`[test setup] building dist/ (${reason})`);
  execFileSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(ROOT, 'tsconfig.build.json')], {
    cwd: ROOT,
    stdio: 'inherit',
  });
}
