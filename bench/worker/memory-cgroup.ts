import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * A memory cgroup to run worker processes in, as a container with a memory limit would (the Helm
 * chart's default limit is 512Mi). Node sizes V8's heap from the cgroup's limit (a 512 MiB cgroup
 * gives a ~259 MiB heap limit instead of ~4 GiB on this 24 GB host), and that sizing is what decides
 * how far RSS grows under load. Needs root and a cgroup v1 memory controller or cgroup v2.
 * Returns the cgroup.procs file to write a process id into.
 */
export function memoryCgroup(name: string, limitMiB: number): string {
  const bytes = String(limitMiB * 1024 * 1024);
  const v1 = '/sys/fs/cgroup/memory';
  if (existsSync(join(v1, 'memory.limit_in_bytes')) || existsSync(join(v1, 'cgroup.procs'))) {
    const dir = join(v1, name);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'memory.limit_in_bytes'), bytes);
    return join(dir, 'cgroup.procs');
  }
  const v2 = '/sys/fs/cgroup';
  if (existsSync(join(v2, 'cgroup.subtree_control'))) {
    writeFileSync(join(v2, 'cgroup.subtree_control'), '+memory');
    const dir = join(v2, name);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'memory.max'), bytes);
    return join(dir, 'cgroup.procs');
  }
  throw new Error('no memory cgroup controller found (BENCH_WORKER_MEMORY_LIMIT_MIB needs root and cgroups)');
}

/** `command args` run by a shell that first moves itself into the cgroup (exec keeps the pid). */
export function inCgroup(procsFile: string, command: string, args: string[]): [string, string[]] {
  return ['/bin/sh', ['-c', 'echo $$ > "$0" && exec "$@"', procsFile, command, ...args]];
}
