import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RUN_OPTIONS, toKebab } from '../../src/config/options.js';
import { runCli } from './cli-process.js';

const SECRET = 'cli-secret-0xdeadbeef';
const valid = ['--base-url', 'http://127.0.0.1:1', '--destination', 'd', '--api-key', 'k'];

function expectOneLine(stderr: string): string {
  const lines = stderr.split('\n').filter(Boolean);
  expect(lines, stderr).toHaveLength(1);
  expect(stderr).not.toMatch(/\bat .*\.(ts|js):\d+/);
  return lines[0]!;
}

describe('durable-worker CLI usage', () => {
  it('--help lists the four commands and exits 0', async () => {
    const result = await runCli(['--help']);
    expect(result.code).toBe(0);
    for (const command of ['run', 'emulator', 'dev', 'check']) expect(result.stdout).toContain(`durable-worker ${command}`);
  });

  it('run --help documents every run option and exits 0', async () => {
    const result = await runCli(['run', '--help']);
    expect(result.code).toBe(0);
    for (const option of RUN_OPTIONS) expect(result.stdout).toContain(`--${toKebab(option.key)}`);
    expect(result.stdout).toContain('--config');
    expect(result.stdout).toContain('Examples:');
  });

  it.each([['emulator'], ['dev'], ['check']])('%s --help exits 0 with examples', async (command) => {
    const result = await runCli([command, '--help']);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('Examples:');
  });

  it('an unknown option exits 2 with one line naming it', async () => {
    const result = await runCli(['run', ...valid, '--limmit', '5']);
    expect(result.code).toBe(2);
    expect(expectOneLine(result.stderr)).toBe('durable-worker: unknown option --limmit');
  });

  it('a bad value exits 2 with one line naming the option and the value', async () => {
    const result = await runCli(['run', ...valid, '--limit', '500']);
    expect(result.code).toBe(2);
    expect(expectOneLine(result.stderr)).toBe('durable-worker: --limit must be 1..100 (got 500)');
  });

  it('a missing value and a missing command exit 2', async () => {
    const missingValue = await runCli(['run', '--visibility']);
    expect(missingValue.code).toBe(2);
    expect(expectOneLine(missingValue.stderr)).toBe('durable-worker: --visibility needs a value');
    const noCommand = await runCli([]);
    expect(noCommand.code).toBe(2);
    expect(expectOneLine(noCommand.stderr)).toMatch(/^durable-worker: a command is required/);
  });

  it('reads options from env vars and says which one is wrong', async () => {
    const result = await runCli(['run'], {
      env: { DURABLE_WORKER_BASE_URL: 'http://127.0.0.1:1', DURABLE_WORKER_DESTINATION: 'd', DURABLE_WORKER_API_KEY: 'k', DURABLE_WORKER_VISIBILITY: '0' },
    });
    expect(result.code).toBe(2);
    expect(expectOneLine(result.stderr)).toBe('durable-worker: --visibility (from DURABLE_WORKER_VISIBILITY) must be 1..600 (got 0)');
  });

  it('reads --config and never prints a secret', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dw-cli-'));
    writeFileSync(join(dir, 'worker.json'), JSON.stringify({ baseUrl: 'http://127.0.0.1:1', destination: 'd', clientSecret: SECRET, tenant: 't' }));
    const result = await runCli(['run', '--config', 'worker.json', '--api-key', SECRET], { cwd: dir });
    expect(result.code).toBe(2);
    expect(expectOneLine(result.stderr)).toMatch(/^durable-worker: use either --api-key or client credentials/);
    expect(result.stderr + result.stdout).not.toContain(SECRET);
    const missing = await runCli(['run', '--config', 'nope.json'], { cwd: dir });
    expect(missing.code).toBe(2);
    expect(expectOneLine(missing.stderr)).toBe(`durable-worker: --config: cannot read ${join(dir, 'nope.json')} (ENOENT)`);
  });

  it('--client-secret-file errors name the file', async () => {
    const result = await runCli(['run', '--base-url', 'http://h', '--destination', 'd', '--tenant', 't', '--client-id', 'c', '--client-secret-file', '/nonexistent/secret']);
    expect(result.code).toBe(2);
    expect(expectOneLine(result.stderr)).toBe('durable-worker: --client-secret-file: cannot read /nonexistent/secret (ENOENT)');
  });

  it('emulator rejects a bad port with exit 2', async () => {
    const result = await runCli(['emulator', '--port', '70000']);
    expect(result.code).toBe(2);
    expect(expectOneLine(result.stderr)).toBe('durable-worker: --port must be 0..65535 (got 70000)');
  });
});
