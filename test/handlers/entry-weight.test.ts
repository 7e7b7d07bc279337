import { existsSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const distEntry = fileURLToPath(new URL('../../dist/index.js', import.meta.url));

/** What a compiled module imports when it loads: static `import`/`export ... from`, not `import()`. */
function staticImports(source: string): string[] {
  const specifiers = [...source.matchAll(/^(?:import|export)\s[^;]*?\sfrom\s*'([^']+)';/gms)].map((m) => m[1]!);
  return [...specifiers, ...[...source.matchAll(/^import\s*'([^']+)';/gm)].map((m) => m[1]!)];
}

/** Every package (bare specifier) the module graph of `file` loads, following relative imports. */
function packagesLoadedBy(file: string, seen = new Set<string>(), packages = new Set<string>()): Set<string> {
  if (seen.has(file)) return packages;
  seen.add(file);
  for (const specifier of staticImports(readFileSync(file, 'utf8'))) {
    if (specifier.startsWith('.')) packagesLoadedBy(resolve(dirname(file), specifier), seen, packages);
    else packages.add(specifier);
  }
  return packages;
}

// Handler modules import `defineHandler` from the package entry, and with --isolation thread every
// worker thread evaluates it: the worker, the emulator, undici and zod load only when used
// (docs/benchmarks.md, phase d: ~10 MB of live heap per thread otherwise).
describe('the package entry (dist/, built by `npm test`)', () => {
  it('loads no third-party package and no worker or emulator module when imported', () => {
    expect(existsSync(distEntry), 'run `npm run build` first').toBe(true);
    const seen = new Set<string>();
    const packages = [...packagesLoadedBy(distEntry, seen)].filter((p) => !p.startsWith('node:'));
    expect(packages).toEqual([]);
    const modules = [...seen].map((f) => f.slice(dirname(distEntry).length + 1));
    expect(modules.filter((m) => /^(worker|emulator|dispatch|idempotency|observability|cli|ingest)\//.test(m))).toEqual([]);
  });
});
