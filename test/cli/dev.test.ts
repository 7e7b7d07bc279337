import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.js';
import { startEmulator } from '../../src/emulator/index.js';
import { loadedFiles, recordingLoads } from '../fixtures/record-loads/loads.js';
import { waitFor } from '../fixtures/wait-for.js';
import { CliProcess, REPO_ROOT, runCli } from './cli-process.js';

const HANDLERS = join(REPO_ROOT, 'test/fixtures/cli-run-handlers');

const isConsoleModule = (path: string) => path.startsWith('src/console/') || path.startsWith('dist/console/');

describe('durable-worker dev', () => {
  it('--demo ingests sample entries that reach the handlers; SIGTERM drains and exits 0', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dw-dev-'));
    const record = join(dir, 'record.txt');
    const cli = new CliProcess(
      [
        'dev',
        '--demo',
        '--port',
        '0',
        '--metrics-port',
        '0',
        '--metrics-host',
        '127.0.0.1',
        '--handlers',
        HANDLERS,
        '--isolation',
        'none',
        '--idempotency',
        'memory',
      ],
      { cwd: dir, env: { DW_TEST_RECORD_FILE: record, DURABLE_WORKER_BASE_URL: 'http://must-not-be-used.invalid' } },
    );
    try {
      const [, url] = await cli.waitForOutput(/emulator listening on (http:\/\/127\.0\.0\.1:\d+)/);
      // Written after that log line, possibly in a chunk of its own.
      await cli.waitForOutput(new RegExp(`curl -s -X POST ${url!.replace(/[.]/g, '\\.')}/oauth2/token`));
      await waitFor('a demo entry to reach the handler', () => existsSync(record) && readFileSync(record, 'utf8').includes('product-'), 25_000, 100);
      cli.kill('SIGTERM');
      const result = await cli.exited;
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toContain('demo: ingesting sample entries into demo-products');
    } finally {
      cli.kill('SIGKILL');
    }
  });

  it('without --handlers and without ./handlers, runs the example folder bundled with the package and says so', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dw-dev-empty-'));
    const cli = new CliProcess(
      ['dev', '--demo', '--port', '0', '--metrics-port', '0', '--metrics-host', '127.0.0.1', '--isolation', 'none', '--idempotency', 'memory'],
      { cwd: dir },
    );
    try {
      const bundled = join(REPO_ROOT, 'handlers');
      await cli.waitForOutput(/using the example handlers bundled with durable-worker/);
      // The package's folder, not one under the working directory.
      expect(cli.stdout).toContain(`"handlersDir":"${bundled}"`);
      expect(cli.stdout).toContain(`bundled with durable-worker (${bundled})`);
      // The bundled handlers/entry-changes.js handles the demo traffic.
      await cli.waitForOutput(/"handler":"entry-changes"[^\n]*"msg":"entry product-\d+ (created|updated)/, 25_000);
      cli.kill('SIGTERM');
      const result = await cli.exited;
      expect(result.code, result.stderr).toBe(0);
      expect(readdirSync(dir)).not.toContain('handlers');
    } finally {
      cli.kill('SIGKILL');
    }
  });

  it('serves the console and prints its address; --no-console serves none', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dw-dev-console-'));
    const base = [
      'dev',
      '--port',
      '0',
      '--metrics-port',
      '0',
      '--metrics-host',
      '127.0.0.1',
      '--handlers',
      HANDLERS,
      '--isolation',
      'none',
      '--idempotency',
      'memory',
      '--dead-letter',
      `file:${join(dir, 'dead.jsonl')}`,
    ];
    const withConsole = new CliProcess([...base, '--console-port', '0'], { cwd: dir, env: recordingLoads(join(dir, 'loads-with.txt')) });
    const without = new CliProcess([...base, '--no-console'], { cwd: dir, env: recordingLoads(join(dir, 'loads-without.txt')) });
    try {
      const [, url] = await withConsole.waitForOutput(/Open the console: (http:\/\/127\.0\.0\.1:\d+) /);
      expect((await fetch(`${url}/api/info`)).status).toBe(200);
      expect(await (await fetch(url!)).text()).toContain('<title>durable-worker console</title>');
      await without.waitForOutput(/metrics at http/);
      withConsole.kill('SIGTERM');
      without.kill('SIGTERM');
      const [a, b] = await Promise.all([withConsole.exited, without.exited]);
      expect([a.code, b.code], a.stderr + b.stderr).toEqual([0, 0]);
      expect(b.stdout).not.toContain('Open the console');
      expect(b.stdout).not.toContain('"msg":"console at');
      expect(a.stdout).toContain('"msg":"console at');
      // --no-console loads none of the console's modules.
      expect(loadedFiles(join(dir, 'loads-with.txt'))).toContain('src/console/index.ts');
      expect(loadedFiles(join(dir, 'loads-without.txt'))).toContain('src/cli/commands/dev.ts');
      expect(loadedFiles(join(dir, 'loads-without.txt')).filter(isConsoleModule)).toEqual([]);
    } finally {
      withConsole.kill('SIGKILL');
      without.kill('SIGKILL');
    }
  });

  it('run never serves the console: its options are unknown there', async () => {
    const result = await runCli(['run', '--base-url', 'http://127.0.0.1:1', '--destination', 'd', '--api-key', 'k', '--console-port', '0']);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe('durable-worker: unknown option --console-port\n');
  });

  it("run loads none of the console's modules, in the process or its handler threads", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dw-run-no-console-'));
    const record = join(dir, 'record.txt');
    const loads = join(dir, 'loads.txt');
    const emulator = await startEmulator({ port: 0 });
    try {
      const credentials = { tenant: 'dev-tenant', clientId: 'dev-client', clientSecret: 'dev-secret' };
      const client = createClient({ baseUrl: emulator.url, ...credentials });
      await client.ingest('run-no-console', { entries: [{ id: 'entry-1', properties: [{ id: 'name', value: 'Kettle' }] }] }).finally(() => client.close());
      const args = [
        'run',
        '--base-url',
        emulator.url,
        '--tenant',
        credentials.tenant,
        '--client-id',
        credentials.clientId,
        '--client-secret',
        credentials.clientSecret,
      ];
      const result = await runCli(
        [
          ...args,
          '--destination',
          'dev-consumer',
          '--handlers',
          HANDLERS,
          '--isolation',
          'thread',
          '--idempotency',
          'memory',
          '--dead-letter',
          `file:${join(dir, 'dead.jsonl')}`,
          '--metrics-port',
          '0',
          '--metrics-host',
          '127.0.0.1',
          '--exit-when-idle',
        ],
        { cwd: dir, env: { ...recordingLoads(loads), DW_TEST_RECORD_FILE: record } },
      );
      expect(result.code, result.stderr).toBe(0);
      expect(readFileSync(record, 'utf8')).toBe('entry-1\n');
      const loaded = loadedFiles(loads);
      // The recording saw the worker and its handler threads (thread-entry.ts runs in a thread only).
      expect(loaded).toEqual(expect.arrayContaining(['src/worker/start.ts', 'src/dispatch/thread-entry.ts', 'test/fixtures/cli-run-handlers/record.ts']));
      expect(loaded.filter(isConsoleModule)).toEqual([]);
    } finally {
      await emulator.close();
    }
  });

  it('a handlers folder that does not exist: exit 2 with one line, before any address or command is printed', async () => {
    const missing = join(mkdtempSync(join(tmpdir(), 'dw-dev-missing-')), 'handlers');
    const result = await runCli(['dev', '--handlers', missing, '--port', '0', '--console-port', '0', '--metrics-port', '0']);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(`durable-worker: handlers folder ${missing} does not exist (--handlers)\n`);
    expect(result.stdout).toBe('');
  });

  it('a bad console option exits 2 with one line naming it', async () => {
    const missing = join(tmpdir(), 'dw-no-such-handlers');
    const cases: Array<[string[], string]> = [
      [['--console-port', 'abc'], '--console-port must be 0..65535 (got abc)'],
      [['--console-events', '0'], '--console-events must be 1..100000 (got 0)'],
      [['--console=maybe'], '--console must be true or false (or 1/0) (got maybe)'],
    ];
    const results = await Promise.all(cases.map(([args]) => runCli(['dev', '--port', '0', '--metrics-port', '0', '--handlers', missing, ...args])));
    results.forEach((result, i) => {
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr).toBe(`durable-worker: ${cases[i]![1]}\n`);
    });
  });

  it('a bad boolean value exits 2 naming the option (--demo and the run options)', async () => {
    // A missing handlers folder: were the value accepted, dev would still stop (exit 2, another message).
    const missing = join(tmpdir(), 'dw-no-such-handlers');
    const [demo, exitWhenIdle] = await Promise.all([
      runCli(['dev', '--port', '0', '--metrics-port', '0', '--handlers', missing, '--demo=maybe']),
      runCli(['dev', '--port', '0', '--metrics-port', '0', '--handlers', missing, '--exit-when-idle=maybe']),
    ]);
    expect(demo.code).toBe(2);
    expect(demo.stderr).toBe('durable-worker: --demo must be true or false (or 1/0) (got maybe)\n');
    expect(exitWhenIdle.code).toBe(2);
    expect(exitWhenIdle.stderr).toBe('durable-worker: --exit-when-idle must be true or false (or 1/0) (got maybe)\n');
  });
});
