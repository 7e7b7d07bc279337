/**
 * Which `durable-worker` a project made by `init` depends on: the one `init` ran from. Until the
 * package is on the npm registry, a version range would install nothing (E404) or, worse, someone
 * else's package of that name; so a copy installed from a tarball or a folder (`npx ./x.tgz init`,
 * `npm install ../x.tgz`) gives the project that same `file:` source, and a clone gives its folder.
 */
import { existsSync, readFileSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

interface Manifest {
  name?: string;
  version: string;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
}

/** This package's folder (src/cli/ and dist/cli/ sit two levels below it). */
export const PACKAGE_ROOT = fileURLToPath(new URL('../../', import.meta.url)).replace(/[\\/]$/, '');

export function readManifest(dir: string): Manifest | undefined {
  const path = join(dir, 'package.json');
  if (!existsSync(path)) return undefined;
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as Manifest;
  } catch {
    return undefined;
  }
}

/** A `file:` spec for `target` as written in `projectDir`'s package.json: relative, `/`-separated, as `npm install <path>` writes it. */
function fileSpec(projectDir: string, target: string): string {
  const rel = relative(projectDir, target);
  const path = rel === '' || isAbsolute(rel) ? target : rel.startsWith('..') ? rel : `./${rel}`;
  return `file:${path.split(sep).join('/')}`;
}

/**
 * The dependency spec for `durable-worker` in a project at `projectDir`, for the package at
 * `packageRoot` (version `version`):
 * - installed in some project's node_modules (npx keeps its own such project) from a `file:`
 *   source: that tarball or folder, relative to `projectDir`;
 * - installed from a registry range or a git URL: that range (`^version`) or that URL;
 * - not in a node_modules folder (a clone, an unpacked copy): that folder.
 */
export function dependencySpec(packageRoot: string, version: string, projectDir: string): string {
  const parent = dirname(packageRoot);
  if (basename(parent) !== 'node_modules') return fileSpec(projectDir, packageRoot);
  const owner = dirname(parent);
  const manifest = readManifest(owner);
  const spec =
    manifest?.dependencies?.['durable-worker'] ?? manifest?.devDependencies?.['durable-worker'] ?? manifest?.optionalDependencies?.['durable-worker'];
  // A global install, or a layout we do not know: the installed folder itself.
  if (spec === undefined) return fileSpec(projectDir, packageRoot);
  if (spec.startsWith('file:')) return fileSpec(projectDir, resolve(owner, spec.slice('file:'.length)));
  if (/^(git\+|git:|github:|https?:)/.test(spec)) return spec;
  return `^${version}`;
}
