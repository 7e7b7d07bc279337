/**
 * The packages only some configurations use (package.json `peerDependenciesMeta`, optional): the
 * PostgreSQL and Redis drivers and the OpenTelemetry SDK. The base install leaves them out; a
 * configuration that needs one names it at start-up, with the command that installs it, instead
 * of failing deep inside a store or the tracer.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { ConfigError, hasCode } from '../errors.js';

const require = createRequire(import.meta.url);

/** Whether `name` resolves from this package, as a dynamic `import(name)` here would find it. */
export function isInstalled(name: string): boolean {
  try {
    require.resolve(name);
    return true;
  } catch (err) {
    // A package that is there but will not resolve this way is left for the import to report.
    return !hasCode(err, 'MODULE_NOT_FOUND');
  }
}

/** `name@range` as this package's peerDependencies allow it (the name alone if the manifest cannot be read). */
function installSpec(name: string): string {
  try {
    // dist/runtime and src/runtime are both two folders below the package root.
    const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { peerDependencies?: Record<string, string> };
    const range = manifest.peerDependencies?.[name];
    return range === undefined ? name : `${name}@${range}`;
  } catch {
    return name;
  }
}

/** The one-line configuration error (exit 2) for `names` missing, needed by `need` (e.g. `--idempotency postgres://`). */
export function missingPackagesError(names: readonly string[], need: string, option: string, cause?: unknown): ConfigError {
  const list = names.join(' and ');
  return new ConfigError(
    `${need} needs ${list}, which ${names.length === 1 ? 'is' : 'are'} not installed: npm install ${names.map(installSpec).join(' ')}`,
    option,
    { cause },
  );
}

/** Throws `missingPackagesError` unless every one of `names` is installed. */
export function requirePackages(names: readonly string[], need: string, option: string): void {
  const missing = names.filter((name) => !isInstalled(name));
  if (missing.length > 0) throw missingPackagesError(missing, need, option);
}

/**
 * `load()` (a dynamic `import(name)`), with a missing `name` turned into `missingPackagesError`:
 * the use site of an optional package, for callers that skip the start-up check (the API).
 */
export async function importOptional<T>(name: string, need: string, option: string, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (err) {
    if (hasCode(err, 'ERR_MODULE_NOT_FOUND') && !isInstalled(name)) throw missingPackagesError([name], need, option, err);
    throw err;
  }
}
