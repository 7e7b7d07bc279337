import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

/**
 * How a handler thread starts. Piscina loads a thread's file with require() first, and on Node 20
 * and 22 a thread terminated while require() instantiates an ES module aborts the whole process (a
 * V8 fatal error). Pools end their threads when they close, and the watchdog ends blocked ones, so
 * the thread entry must never be loaded that way (src/dispatch/thread-start.cts).
 */
const run = promisify(execFile);
const FIXTURE = resolve('test/fixtures/pool-closed-while-starting.mjs');
const HANDLERS = resolve('test/fixtures/handlers-behaviours');
const LAYOUTS = [
  { layout: 'compiled (dist/, as installed)', args: [], pool: resolve('dist/dispatch/thread-pool.js') },
  { layout: 'TypeScript sources (tsx)', args: ['--import', 'tsx'], pool: resolve('src/dispatch/thread-pool.ts') },
];

describe('handler threads start without require() of an ES module', () => {
  it('compiled: a warmed-up pool loads no ES module through require() (--trace-require-module)', async () => {
    const { stdout, stderr } = await run(process.execPath, ['--trace-require-module=all', FIXTURE, LAYOUTS[0]!.pool, HANDLERS, '0']);
    expect(stdout).toContain('warmed up');
    expect(stderr).not.toMatch(/loading ES Module/);
  }, 60_000);

  it.each(LAYOUTS)(
    '$layout: 150 pools closed while their threads start, the process lives on',
    async ({ args, pool }) => {
      const { stdout } = await run(process.execPath, [...args, FIXTURE, pool, HANDLERS, '150'], { maxBuffer: 1 << 20 });
      expect(stdout).toContain('closed 150');
    },
    120_000,
  );
});
