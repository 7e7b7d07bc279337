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
