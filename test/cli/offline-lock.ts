/**
 * A package-lock.json for a project made by `durable-worker init`, built from the repository's own
 * lockfile: `npm ci --offline` then installs it from the npm cache that the repository's `npm ci`
 * filled (tarballs by integrity), with no registry request. A plain `npm install --offline` needs the
 * registry's package documents to resolve ranges, which that cache does not hold for every package.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from './cli-process.js';

interface LockEntry {
  version?: string;
  resolved?: string;
  integrity?: string;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  [key: string]: unknown;
}

interface ProjectPackage {
  name: string;
  version: string;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
}

/** Where npm finds `name` for the package at `from`: its own node_modules, then each parent's, up to the root's. */
function locate(packages: Record<string, LockEntry>, from: string, name: string): string | undefined {
  let base = from;
  for (;;) {
    const candidate = `${base === '' ? '' : `${base}/`}node_modules/${name}`;
    if (packages[candidate] !== undefined) return candidate;
    if (base === '') return undefined;
    const cut = base.lastIndexOf('/node_modules/');
    base = cut === -1 ? '' : base.slice(0, cut);
  }
}

/**
 * The lockfile for `project` whose `durable-worker` dependency is `file:<tarball>` (`tarballPath`
 * to hash it): every package reachable from the project's dependencies, at the place the
 * repository's lockfile has it.
 */
export function projectLock(project: ProjectPackage, tarballSpec: string, tarballPath: string): unknown {
  const repoLock = JSON.parse(readFileSync(join(REPO_ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> };
  const repo = repoLock.packages;
  const own = repo['']!;
  const integrity = `sha512-${createHash('sha512').update(readFileSync(tarballPath)).digest('base64')}`;
  const packages: Record<string, LockEntry> = {
    '': { name: project.name, version: project.version, dependencies: project.dependencies, devDependencies: project.devDependencies },
    'node_modules/durable-worker': {
      version: own.version,
      resolved: tarballSpec,
      integrity,
      license: own.license,
      dependencies: own.dependencies,
      optionalDependencies: own.optionalDependencies,
      bin: own.bin,
      engines: own.engines,
    },
  };
  const queue: Array<[string, string]> = Object.keys({ ...project.dependencies, ...project.devDependencies })
    .filter((name) => name !== 'durable-worker')
    .map((name) => ['', name]);
  for (const name of Object.keys({ ...own.dependencies, ...own.optionalDependencies })) queue.push(['node_modules/durable-worker', name]);
  while (queue.length > 0) {
    const [from, name] = queue.shift()!;
    const location = locate(repo, from === 'node_modules/durable-worker' ? '' : from, name);
    if (location === undefined || packages[location] !== undefined) continue;
    const entry = repo[location]!;
    packages[location] = entry;
    const optionalPeers = new Set(
      Object.entries(entry.peerDependenciesMeta ?? {})
        .filter(([, meta]) => meta.optional === true)
        .map(([peer]) => peer),
    );
    const wanted = [
      ...Object.keys(entry.dependencies ?? {}),
      ...Object.keys(entry.optionalDependencies ?? {}),
      ...Object.keys(entry.peerDependencies ?? {}).filter((p) => !optionalPeers.has(p)),
    ];
    for (const dep of wanted) queue.push([location, dep]);
  }
  return { name: project.name, version: project.version, lockfileVersion: 3, requires: true, packages };
}
