import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT, runCli } from './cli-process.js';

const GOOD = join(REPO_ROOT, 'test/fixtures/cli-handlers');
const BROKEN = join(REPO_ROOT, 'test/fixtures/cli-handlers-broken');

describe('durable-worker check', () => {
  it('prints the routing table and exits 0 with only --handlers', async () => {
    const result = await runCli(['check', '--handlers', GOOD]);
    expect(result.code, result.stderr).toBe(0);
    const rows = result.stdout.split('\n');
    expect(rows.find((r) => r.startsWith('entry-updated '))).toMatch(/entry-updated\s+source_entry\.updated$/);
    expect(rows.find((r) => r.startsWith('catalog/all-products '))).toMatch(/catalog\/all-products\s+product\.\*, source_entry\.updated$/);
    expect(result.stdout).toContain('note: not set (run needs them): --base-url');
    expect(result.stderr).toBe('');
  });

  it('takes the folder from the env var', async () => {
    const result = await runCli(['check'], { env: { DURABLE_WORKER_HANDLERS: GOOD } });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('entry-updated');
  });

  it('exits 1 naming a module that is not a handler', async () => {
    const result = await runCli(['check', '--handlers', BROKEN]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('not-a-handler');
  });

  it('exits 1 on a bad option value but still lists the handlers', async () => {
    const result = await runCli(['check', '--handlers', GOOD, '--limit', '500']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('--limit must be 1..100 (got 500)');
    expect(result.stdout).toContain('entry-updated');
  });

  it('exits 1 when the folder does not exist', async () => {
    const result = await runCli(['check', '--handlers', join(REPO_ROOT, 'test/fixtures/cli-no-such-folder')]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('cli-no-such-folder');
  });
});

describe('durable-worker check, transactional handlers', () => {
  const TRANSACTIONAL = join(REPO_ROOT, 'test/fixtures/transactional-handlers');

  it('refuses them without a postgres:// store: exit 2, one line naming each handler and the fix', async () => {
    const result = await runCli(['check', '--handlers', TRANSACTIONAL, '--idempotency', 'memory'], { cwd: REPO_ROOT });
    expect(result.code).toBe(2);
    const problems = result.stderr.split('\n').filter((line) => line.includes('problem:'));
    expect(problems).toEqual([
      'durable-worker: problem: test/fixtures/transactional-handlers/bulk.ts, test/fixtures/transactional-handlers/entries/record.ts: transactional: true needs --idempotency postgres://... (the database that holds its effects; got memory)',
    ]);
    // The routing table is still there, transactional handlers named.
    expect(result.stdout).toContain('transactional handler: entries/record');
    expect(result.stdout).toContain('transactional handler: bulk');
    expect(result.stdout).not.toContain('transactional handler: plain');
  });

  it('accepts them with a postgres:// store (not connected by check), never printing its password', async () => {
    const result = await runCli(['check', '--handlers', TRANSACTIONAL, '--idempotency', 'postgres://app:s3cret@127.0.0.1:1/app'], { cwd: REPO_ROOT });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('ok: 3 handler(s)');
    expect(`${result.stdout}${result.stderr}`).not.toContain('s3cret');
  });
});

describe('durable-worker check --setup', () => {
  const SETUP = join(REPO_ROOT, 'test/fixtures/cli-setup-handlers');

  it("runs each handler's setup once, then its teardown, and names a handler whose setup fails (exit 1)", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'dw-check-setup-'));
    const log = join(dir, 'setup.log');
    // About setup, not types: the type check (test/cli/load-errors.test.ts) is skipped, its seconds saved.
    const failing = await runCli(['check', '--handlers', SETUP, '--setup', '--no-type-check'], { env: { SETUP_LOG: log } });
    expect(failing.code).toBe(1);
    expect(failing.stdout).toMatch(/^warehouse\s+source_entry\.updated$/m);
    expect(failing.stdout).toContain('batch handler: warehouse (at most 50 events per call)');
    expect(failing.stdout).toContain('setup ok: warehouse');
    expect(failing.stderr).toContain('problem: setup of handler search-index failed: SEARCH_URL is not set');
    expect(failing.stderr).toContain('durable-worker: warehouse setup info: connected');
    expect(await readFile(log, 'utf8')).toBe('setup warehouse\nteardown warehouse true\n');

    const passing = await runCli(['check', '--handlers', SETUP, '--setup', '--no-type-check'], { env: { SETUP_LOG: log, SEARCH_URL: 'http://127.0.0.1:1' } });
    expect(passing.code, passing.stderr).toBe(0);
    expect(passing.stdout).toContain('setup ok: search-index');
    expect(passing.stdout).toContain('ok: 2 handler(s)');
  });

  it('without --setup, no setup runs; a bad --setup value exits 2 naming the flag', async () => {
    const plain = await runCli(['check', '--handlers', SETUP], { env: { SETUP_LOG: '/nonexistent/never-written' } });
    expect(plain.code, plain.stderr).toBe(0);
    expect(plain.stdout).not.toContain('setup ok');
    const bad = await runCli(['check', '--handlers', SETUP, '--setup=maybe']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--setup');
  });
});
