/**
 * Cold start: from spawning a process to the first event's handler running in it, against the
 * emulator in this process (one event waiting each time):
 *
 *   npm run bench:coldstart -- [--spawns 10] [--only naive,naive-threads,bin,npx,bin-none]
 *
 * - naive: bench/coldstart/naive-loop.mjs, a pull loop in one file (fetch, no dependency): the floor.
 * - naive-threads: the same loop with the handler in two piscina threads (naive-threads.mjs): the
 *   floor of thread isolation, what starting the threads alone costs on this machine.
 * - bin: `node bin/durable-worker.js run` as the image runs it: thread isolation, the SQLite store,
 *   the compile cache warm (one untimed spawn first fills it).
 * - npx: `npx durable-worker run` in the clone, the same options (npm's own start included).
 * - bin-none: bin with `--isolation none --idempotency memory`.
 * - image (with DW_IMAGE, a local image: `eval "$(bash .ci/image.sh)"`): `podman run` of the image with its
 *   defaults (read-only root, the SQLite store in its volume, its warmed compile cache); the time starts
 *   inside the container, just before its entrypoint (tini, then the CLI) runs, so podman's own
 *   container set-up is left out, as a pod's would be.
 *
 * Each spawn gets a fresh state folder (its SQLite file is new) and exits once idle. The handler
 * writes the wall clock (performance.timeOrigin + performance.now(), any thread) to a file; the time
 * is that minus the clock just before spawn. Prints the median, min and max of each, with the load.
 */
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { startEmulator } from '../../src/emulator/index.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIN = join(ROOT, 'bin', 'durable-worker.js');
const NAIVE = join(ROOT, 'bench', 'coldstart', 'naive-loop.mjs');
const NAIVE_THREADS = join(ROOT, 'bench', 'coldstart', 'naive-threads.mjs');

const { values } = parseArgs({
  options: { spawns: { type: 'string', default: '10' }, only: { type: 'string', default: 'naive,naive-threads,bin,npx,bin-none' } },
});
const spawns = Number(values.spawns);
const variants = values.only.split(',');

const now = () => performance.timeOrigin + performance.now();

const dir = mkdtempSync(join(tmpdir(), 'dw-bench-coldstart-'));
const handlers = join(dir, 'handlers');
mkdirSync(handlers);
const marker = join(dir, 'first-event.txt');
const markSource = `async handle() {
    writeFileSync(${JSON.stringify(marker)}, String(performance.timeOrigin + performance.now()));
  },`;
// The worker's handler, made with defineHandler; the naive loop's, the same function as a plain object.
writeFileSync(
  join(handlers, 'mark.mjs'),
  `import { writeFileSync } from 'node:fs';
import { defineHandler } from ${JSON.stringify(pathToFileURL(join(ROOT, 'dist', 'index.js')).href)};
export default defineHandler({ type: '*', ${markSource} });
`,
);
const naiveHandler = join(dir, 'naive-mark.mjs');
writeFileSync(naiveHandler, `import { writeFileSync } from 'node:fs';\nexport default { ${markSource} };\n`);

// The image's handler: `durable-worker` from the image's /app/node_modules; the marker in a shared folder.
const image = process.env.DW_IMAGE;
const imageHandlers = join(dir, 'image-handlers');
const imageMarks = join(dir, 'image-marks');
mkdirSync(imageHandlers);
mkdirSync(imageMarks, { mode: 0o777 });
chmodSync(imageMarks, 0o777);
writeFileSync(
  join(imageHandlers, 'mark.mjs'),
  `import { writeFileSync } from 'node:fs';
import { defineHandler } from 'durable-worker';
export default defineHandler({ type: '*', async handle() { writeFileSync('/marks/first-event.txt', String(performance.timeOrigin + performance.now())); } });
`,
);

const emulator = await startEmulator({ port: 0 });

function command(variant: string, state: string): [string, string[]] {
  const run = [
    'run',
    '--base-url',
    emulator.url,
    '--destination',
    'dev-consumer',
    '--api-key',
    'dev-api-key',
    '--handlers',
    handlers,
    '--metrics-port',
    '0',
    '--metrics-host',
    '127.0.0.1',
    '--exit-when-idle',
    '--log-level',
    'warn',
  ];
  const stores = ['--idempotency', `sqlite:${join(state, 'idempotency.sqlite')}`, '--dead-letter', `file:${join(state, 'dead-letter.jsonl')}`];
  if (variant === 'naive') return [process.execPath, [NAIVE, emulator.url, 'dev-consumer', 'dev-api-key', pathToFileURL(naiveHandler).href]];
  if (variant === 'naive-threads') return [process.execPath, [NAIVE_THREADS, emulator.url, 'dev-consumer', 'dev-api-key', pathToFileURL(naiveHandler).href]];
  if (variant === 'bin') return [process.execPath, [BIN, ...run, ...stores]];
  if (variant === 'npx') return ['npx', ['--no-install', 'durable-worker', ...run, ...stores]];
  if (variant === 'image') {
    if (image === undefined) throw new Error('image: set DW_IMAGE to a local image (eval "$(bash .ci/image.sh)")');
    const inside = `echo $(date +%s%N) > /marks/started && exec /usr/bin/tini -- durable-worker ${run.join(' ').replace(handlers, '/app/handlers')}`;
    const mounts = ['-v', `${imageHandlers}:/app/handlers:ro`, '-v', `${imageMarks}:/marks`];
    return ['podman', ['run', '--rm', '--network', 'host', '--read-only', ...mounts, '--entrypoint', 'sh', image, '-c', inside]];
  }
  if (variant === 'bin-none')
    return [process.execPath, [BIN, ...run, '--isolation', 'none', '--idempotency', 'memory', '--dead-letter', `file:${join(state, 'dead-letter.jsonl')}`]];
  throw new Error(`unknown variant ${variant} (naive, naive-threads, bin, npx, bin-none, image)`);
}

/** One spawn: ms from spawn to the handler's first run; the process must exit 0. */
async function once(variant: string): Promise<number> {
  const mark = variant === 'image' ? join(imageMarks, 'first-event.txt') : marker;
  rmSync(mark, { force: true });
  emulator.appendEvents('dev-tenant', [{ type: 'bench.coldstart', subject: `s-${Math.random()}`, data: {} }]);
  const state = mkdtempSync(join(dir, 'state-'));
  const [file, args] = command(variant, state);
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1' };
  delete env.NODE_OPTIONS;
  const started = now();
  const child = spawn(file, args, { cwd: ROOT, env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  if (code !== 0 || !existsSync(mark)) throw new Error(`${variant}: exit ${code}, marker ${existsSync(mark)}\n${stderr}`);
  // In the container the clock starts at its entrypoint (date +%s%N, the host's clock).
  const from = variant === 'image' ? Number(readFileSync(join(imageMarks, 'started'), 'utf8')) / 1e6 : started;
  return Number(readFileSync(mark, 'utf8')) - from;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;
console.log(
  `node ${process.version}, ${cpus().length} cores, load ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}; ${spawns} spawns each`,
);
console.log('| variant | median | min | max |');
console.log('|---|---|---|---|');
try {
  for (const variant of variants) {
    await once(variant); // untimed: fills the compile cache and the OS's file cache
    const times: number[] = [];
    for (let i = 0; i < spawns; i++) times.push(await once(variant));
    console.log(`| ${variant} | ${median(times).toFixed(0)} ms | ${Math.min(...times).toFixed(0)} ms | ${Math.max(...times).toFixed(0)} ms |`);
  }
} finally {
  await emulator.close();
  rmSync(dir, { recursive: true, force: true });
}
console.log(
  `load after: ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`,
);
