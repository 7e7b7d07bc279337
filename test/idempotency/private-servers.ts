/**
 * Private Redis and PostgreSQL servers on free ports, which a test may stop and start again
 * without disturbing the shared servers other suites use.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, chmodSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from '../fixtures/wait-for.js';
import type { MakeStore, PrivateServer } from './contract.js';

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address !== null ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

function has(command: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0;
}

/** Why a private Redis cannot run here, or undefined when it can. */
export function privateRedisUnavailable(): string | undefined {
  return has('redis-server') && has('redis-cli') ? undefined : 'redis-server/redis-cli not installed';
}

export async function startPrivateRedis(makeStore: (url: string) => MakeStore): Promise<PrivateServer> {
  const port = await freePort();
  let child: ChildProcess | undefined;
  const ping = () => spawnSync('redis-cli', ['-p', String(port), 'ping'], { encoding: 'utf8' }).stdout.trim() === 'PONG';
  const start = async () => {
    child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
      stdio: 'ignore',
    });
    await waitFor(`redis on port ${port}`, async () => ping(), 10_000);
  };
  const stop = async () => {
    const exited = child === undefined || child.exitCode !== null ? Promise.resolve() : new Promise((r) => child!.once('exit', r));
    spawnSync('redis-cli', ['-p', String(port), 'shutdown', 'nosave'], { stdio: 'ignore' });
    await exited;
  };
  await start();
  return {
    makeStore: makeStore(`redis://127.0.0.1:${port}`),
    start,
    stop,
    dispose: async () => {
      await stop();
    },
  };
}

function pgBinDir(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root).sort((a, b) => Number(a) - Number(b));
  const latest = versions.at(-1);
  return latest === undefined ? undefined : join(root, latest, 'bin');
}

/** Runs a PostgreSQL binary as the `postgres` user when we are root (postgres refuses root). */
function asPostgres(binary: string, args: string[]): { status: number | null; output: string } {
  const command = process.getuid?.() === 0 ? ['runuser', ['-u', 'postgres', '--', binary, ...args]] : [binary, args];
  const result = spawnSync(command[0] as string, command[1] as string[], { encoding: 'utf8' });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

export function privatePostgresUnavailable(): string | undefined {
  const bin = pgBinDir();
  if (bin === undefined || !existsSync(join(bin, 'initdb'))) return 'PostgreSQL server binaries not installed';
  if (process.getuid?.() === 0 && !has('runuser')) return 'running as root without runuser';
  return undefined;
}

/** A throwaway cluster (initdb, trust auth on 127.0.0.1) on a free port; ~1 s to create. */
export async function startPrivatePostgres(makeStore: (url: string) => MakeStore): Promise<PrivateServer> {
  const bin = pgBinDir() as string;
  const dir = mkdtempSync(join(tmpdir(), 'dw-pg-'));
  chmodSync(dir, 0o777);
  const dataDir = join(dir, 'data');
  const port = await freePort();
  const init = asPostgres(join(bin, 'initdb'), ['-D', dataDir, '-A', 'trust', '-U', 'postgres', '--no-sync']);
  if (init.status !== 0) throw new Error(`initdb failed: ${init.output}`);
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`;
  const start = async () => {
    const started = asPostgres(join(bin, 'pg_ctl'), ['-D', dataDir, '-o', options, '-l', join(dir, 'log'), '-w', 'start']);
    if (started.status !== 0) throw new Error(`pg_ctl start failed: ${started.output}`);
  };
  const stop = async () => {
    // fast: terminates the sessions, as a server restart or failover does.
    asPostgres(join(bin, 'pg_ctl'), ['-D', dataDir, '-m', 'fast', '-w', 'stop']);
  };
  await start();
  return {
    makeStore: makeStore(`postgres://postgres@127.0.0.1:${port}/postgres`),
    start,
    stop,
    dispose: async () => {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
