import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RUN_OPTIONS, toKebab } from '../../src/config/options.js';
import { REPO_ROOT, runCli } from './cli-process.js';

const SECRET = 'cli-secret-0xdeadbeef';
const valid = ['--base-url', 'http://127.0.0.1:1', '--destination', 'd', '--api-key', 'k'];
const BOOLEAN_OPTIONS = RUN_OPTIONS.filter((o) => o.kind === 'boolean').map((o) => toKebab(o.key));

/**
 * The configuration `run` resolved from `args`, read from its start-up log line. The handlers folder
 * does not exist, so the worker then stops with exit 2 before it opens anything.
 */
async function resolvedConfig(args: string[], env: Record<string, string> = {}): Promise<Record<string, unknown>> {
  const dir = mkdtempSync(join(tmpdir(), 'dw-cli-'));
  const result = await runCli(['run', ...valid, '--handlers', join(dir, 'no-handlers'), '--dead-letter', `file:${join(dir, 'dl.jsonl')}`, ...args], {
    cwd: dir,
    env,
  });
  expect(result.code, result.stderr).toBe(2);
  expect(result.stderr).toContain('no-handlers does not exist (--handlers)');
  const line = result.stdout.split('\n').find((l) => l.includes('"msg":"starting durable-worker"'));
  expect(line, result.stdout).toBeDefined();
  return (JSON.parse(line!) as { config: Record<string, unknown> }).config;
}

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

  it.each(BOOLEAN_OPTIONS)('--%s: alone true, =true / =false / --no- as said, anything else exits 2 naming it', async (name) => {
    const key = name.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
    const forms: [string, boolean][] = [
      [`--${name}`, true],
      [`--${name}=true`, true],
      [`--${name}=false`, false],
      [`--no-${name}`, false],
      [`--${name}=0`, false],
    ];
    const configs = await Promise.all(forms.map(([arg]) => resolvedConfig([arg])));
    expect(configs.map((c) => c[key])).toEqual(forms.map(([, value]) => value));

    // A missing handlers folder: were the value accepted, the worker would still stop (exit 2, another message).
    const stop = ['--handlers', join(tmpdir(), 'dw-no-such-handlers')];
    const [joined, spaced, negated] = await Promise.all([
      runCli(['run', ...valid, ...stop, `--${name}=maybe`]),
      runCli(['run', ...valid, ...stop, `--${name}`, 'maybe']),
      runCli(['run', ...valid, ...stop, `--no-${name}=true`]),
    ]);
    for (const result of [joined, spaced]) {
      expect(result.code).toBe(2);
      expect(expectOneLine(result.stderr)).toBe(`durable-worker: --${name} must be true or false (or 1/0) (got maybe)`);
    }
    expect(negated.code).toBe(2);
    expect(expectOneLine(negated.stderr)).toBe(`durable-worker: unknown option --no-${name}`);
  });

  it('a repeated flag: the last one wins, for strings, numbers and booleans; env vars are untouched', async () => {
    const config = await resolvedConfig(
      [
        '--limit',
        '5',
        '--limit',
        '6',
        '--visibility=30',
        '--visibility',
        '45',
        '--isolation',
        'thread',
        '--isolation',
        'none',
        '--log-level',
        'silent',
        '--log-level',
        'info',
        '--exit-when-idle',
        '--no-exit-when-idle',
      ],
      { DURABLE_WORKER_CONCURRENCY: '3' },
    );
    expect(config).toMatchObject({ limit: 6, visibilitySeconds: 45, isolation: 'none', logLevel: 'info', exitWhenIdle: false, concurrency: 3 });
    expect((await resolvedConfig(['--no-exit-when-idle', '--exit-when-idle'])).exitWhenIdle).toBe(true);

    const bad = await runCli(['run', ...valid, '--limit', '5', '--limit', '500']);
    expect(bad.code).toBe(2);
    expect(expectOneLine(bad.stderr)).toBe('durable-worker: --limit must be 1..100 (got 500)');
  });

  it('check reports a bad boolean value as a problem (exit 1)', async () => {
    const result = await runCli(['check', '--handlers', join(REPO_ROOT, 'test/fixtures/cli-handlers'), '--exit-when-idle=maybe']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('durable-worker: problem: --exit-when-idle must be true or false (or 1/0) (got maybe)');
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
    const result = await runCli([
      'run',
      '--base-url',
      'http://h',
      '--destination',
      'd',
      '--tenant',
      't',
      '--client-id',
      'c',
      '--client-secret-file',
      '/nonexistent/secret',
    ]);
    expect(result.code).toBe(2);
    expect(expectOneLine(result.stderr)).toBe('durable-worker: --client-secret-file: cannot read /nonexistent/secret (ENOENT)');
  });

  it('emulator rejects a bad port with exit 2', async () => {
    const result = await runCli(['emulator', '--port', '70000']);
    expect(result.code).toBe(2);
    expect(expectOneLine(result.stderr)).toBe('durable-worker: --port must be 0..65535 (got 70000)');
  });
});
