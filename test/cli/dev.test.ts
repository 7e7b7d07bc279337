import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { waitFor } from '../fixtures/wait-for.js';
import { CliProcess, REPO_ROOT } from './cli-process.js';

const HANDLERS = join(REPO_ROOT, 'test/fixtures/cli-run-handlers');

describe('durable-worker dev', () => {
  it('--demo ingests sample entries that reach the handlers; SIGTERM drains and exits 0', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dw-dev-'));
    const record = join(dir, 'record.txt');
    const cli = new CliProcess(
      ['dev', '--demo', '--port', '0', '--metrics-port', '0', '--metrics-host', '127.0.0.1', '--handlers', HANDLERS, '--isolation', 'none', '--idempotency', 'memory'],
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
});
