/**
 * Save to first event handled by the new version, in `durable-worker dev` (a fresh process running
 * the compiled bin, its own emulator):
 *
 *   npm run bench:dev-reload -- [--saves 10] [--isolation thread,none] [--rate 50]
 *
 * A JavaScript handler appends `<version> <entry id>` to a file; entries are ingested at --rate per
 * second the whole time. Each save writes the handler with the next version; the time is from the
 * write to the first line of that version. Prints one row per isolation (median, min, max) with the
 * machine's load average.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { createClient } from '../../src/client/index.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIN = join(ROOT, 'bin', 'durable-worker.js');
const PACKAGE_ENTRY = pathToFileURL(join(ROOT, 'dist', 'index.js')).href;

const { values } = parseArgs({
  options: { saves: { type: 'string', default: '10' }, isolation: { type: 'string', default: 'thread,none' }, rate: { type: 'string', default: '50' } },
});
const saves = Number(values.saves);
const ratePerSecond = Number(values.rate);

function handler(version: number): string {
  return `import { appendFileSync } from 'node:fs';
import { defineHandler } from ${JSON.stringify(PACKAGE_ENTRY)};
export default defineHandler({
  type: 'source_entry.updated',
  async handle(event) {
    appendFileSync(process.env.DW_BENCH_MARKERS, 'v${version} ' + event.subject + ' ' + Date.now() + '\\n');
  },
});
`;
}

async function until<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** The time of the first line of `version`, if written yet. */
function firstOf(markers: string, version: number): number | undefined {
  if (!existsSync(markers)) return undefined;
  const line = readFileSync(markers, 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`v${version} `));
  return line === undefined ? undefined : Number(line.split(' ')[2]);
}

async function measure(isolation: string): Promise<number[]> {
  const dir = mkdtempSync(join(tmpdir(), 'dw-bench-reload-'));
  const handlers = join(dir, 'handlers');
  mkdirSync(handlers);
  writeFileSync(join(dir, 'package.json'), '{ "type": "module" }\n');
  const file = join(handlers, 'marker.js');
  const markers = join(dir, 'markers.txt');
  writeFileSync(file, handler(0));
  const child = spawn(
    process.execPath,
    [BIN, 'dev', '--port', '0', '--no-console', '--metrics-port', '0', '--metrics-host', '127.0.0.1', '--isolation', isolation, '--idempotency', 'memory'],
    {
      cwd: dir,
      env: { ...process.env, DW_BENCH_MARKERS: markers, NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  const times: number[] = [];
  let stop = false;
  try {
    const url = await until('the emulator', () => /emulator listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out)?.[1], 60_000);
    await until('the worker', () => (out.includes('"msg":"worker started"') ? true : undefined), 60_000);
    const client = createClient({ baseUrl: url, tenant: 'dev-tenant', clientId: 'dev-client', clientSecret: 'dev-secret' });
    let n = 0;
    const traffic = (async () => {
      while (!stop) {
        await client.ingest('bench', { entries: [{ id: `e${++n}`, properties: [{ id: 'n', value: n }] }] });
        await new Promise((resolve) => setTimeout(resolve, 1_000 / ratePerSecond));
      }
    })();
    await until('version 0 at work', () => firstOf(markers, 0), 30_000);
    for (let version = 1; version <= saves; version++) {
      const savedAt = Date.now();
      writeFileSync(file, handler(version));
      const first = await until(`version ${version}`, () => firstOf(markers, version), 30_000);
      times.push(first - savedAt);
    }
    stop = true;
    await traffic;
    await client.close();
  } finally {
    stop = true;
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('close', resolve));
    rmSync(dir, { recursive: true, force: true });
  }
  return times;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(
  `node ${process.version}, ${cpus().length} cores, load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}; ${saves} saves, ${ratePerSecond} events/s`,
);
console.log('| isolation | median ms | min ms | max ms |');
console.log('|---|---:|---:|---:|');
for (const isolation of String(values.isolation).split(',')) {
  const times = await measure(isolation);
  console.log(`| ${isolation} | ${median(times)} | ${Math.min(...times)} | ${Math.max(...times)} |`);
}
console.log(
  `load average after: ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
