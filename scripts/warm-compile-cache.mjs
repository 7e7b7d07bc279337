// Container image build (Dockerfile): fills Node's compile cache (NODE_COMPILE_CACHE) with what a
// worker loads, so that the image's first start reuses V8's compiled code instead of compiling every
// module (docs/benchmarks.md#cold-start). Runs `durable-worker run` as the image does (thread
// isolation, the SQLite store) against an emulator in this process, with one event for a handler,
// until it is idle. Node keys the cache by user id: run it as the image's user (10001).
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEmulator } from 'durable-worker';

if (!process.env.NODE_COMPILE_CACHE) throw new Error('warm-compile-cache: set NODE_COMPILE_CACHE to the folder to fill');
const dir = mkdtempSync(join(tmpdir(), 'dw-warm-'));
const handlers = join(dir, 'handlers');
mkdirSync(handlers);
// The package entry by its resolved URL (the temporary folder has no node_modules): the very file the
// image's handlers load from /app/node_modules.
writeFileSync(
  join(handlers, 'warm.mjs'),
  `import { defineHandler } from ${JSON.stringify(import.meta.resolve('durable-worker'))};\nexport default defineHandler({ type: '*', async handle() {} });\n`,
);
const emulator = await startEmulator({ port: 0 });
try {
  emulator.appendEvents('dev-tenant', [{ type: 'warm.up', subject: 'warm', data: {} }]);
  const args = ['run', '--base-url', emulator.url, '--destination', 'dev-consumer', '--api-key', 'dev-api-key', '--handlers', handlers];
  args.push(
    '--metrics-port',
    '0',
    '--exit-when-idle',
    '--log-level',
    'warn',
    '--idempotency',
    `sqlite:${join(dir, 'idempotency.sqlite')}`,
    '--dead-letter',
    `file:${join(dir, 'dead-letter.jsonl')}`,
  );
  const child = spawn('durable-worker', args, { stdio: 'inherit' });
  const code = await new Promise((resolve, reject) => child.on('exit', resolve).on('error', reject));
  if (code !== 0) throw new Error(`warm-compile-cache: durable-worker run exited ${code}`);
} finally {
  await emulator.close();
  rmSync(dir, { recursive: true, force: true });
}
