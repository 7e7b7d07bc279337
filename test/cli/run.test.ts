import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.js';
import { startEmulator } from '../../src/emulator/index.js';
import { waitFor } from '../fixtures/wait-for.js';
import { CliProcess, REPO_ROOT } from './cli-process.js';

const HANDLERS = join(REPO_ROOT, 'test/fixtures/cli-run-handlers');
const DEV = { tenant: 'dev-tenant', clientId: 'dev-client', clientSecret: 'dev-secret' };

let emulator: { url: string; close(): Promise<void> };

beforeAll(async () => {
  emulator = await startEmulator({ port: 0 });
});

afterAll(async () => {
  await emulator?.close();
});

function runArgs(dir: string, extra: string[] = []): string[] {
  return [
    'run',
    '--base-url',
    emulator.url,
    '--tenant',
    DEV.tenant,
    '--client-id',
    DEV.clientId,
    '--client-secret',
    DEV.clientSecret,
    '--destination',
    'dev-consumer',
    '--handlers',
    HANDLERS,
    '--idempotency',
    'memory',
    '--dead-letter',
    `file:${join(dir, 'dead-letter.jsonl')}`,
    '--metrics-port',
    '0',
    '--metrics-host',
    '127.0.0.1',
    '--isolation',
    'none',
    ...extra,
  ];
}

async function ingest(ids: string[]): Promise<void> {
  const client = createClient({ baseUrl: emulator.url, ...DEV });
  try {
    await client.ingest(`cli-run-${Date.now()}`, { entries: ids.map((id) => ({ id, properties: [{ id: 'name', value: id }] })) });
  } finally {
    await client.close();
  }
}

describe('durable-worker run', () => {
  it('never falls back to the bundled example handlers: without ./handlers it exits 2', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dw-run-empty-'));
    const result = await new CliProcess(
      ['run', '--base-url', emulator.url, '--destination', 'dev-consumer', '--api-key', 'k', '--metrics-port', '0', '--idempotency', 'memory'],
      { cwd: dir },
    ).exited;
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(`durable-worker: handlers folder ${join(dir, 'handlers')} does not exist (--handlers)\n`);
    expect(result.stdout).not.toContain('bundled');
  });

  it('processes every event and exits 0 when idle with --exit-when-idle', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dw-run-'));
    const record = join(dir, 'record.txt');
    const ids = ['a-1', 'a-2', 'a-3'].map((id) => `${id}-${dir.slice(-6)}`);
    await ingest(ids);
    const cli = new CliProcess(runArgs(dir, ['--exit-when-idle']), { env: { DW_TEST_RECORD_FILE: record } });
    const result = await cli.exited;
    expect(result.code, result.stderr + result.stdout).toBe(0);
    const seen = readFileSync(record, 'utf8').split('\n').filter(Boolean);
    expect(seen).toEqual(expect.arrayContaining(ids));
    expect(result.stdout).not.toContain(DEV.clientSecret);
  });

  it('serves readyz and metrics, then drains and exits 0 on SIGTERM', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dw-run-'));
    const record = join(dir, 'record.txt');
    const cli = new CliProcess(runArgs(dir), { env: { DW_TEST_RECORD_FILE: record } });
    try {
      const [, metricsUrl] = await cli.waitForOutput(/metrics at (http:\/\/127\.0\.0\.1:\d+)/);
      const base = metricsUrl!.replace(/\/metrics$/, '');
      await waitFor('/readyz to answer 200', async () => (await fetch(`${base}/readyz`).catch(() => undefined))?.status === 200, 20_000, 100);
      const id = `b-1-${dir.slice(-6)}`;
      await ingest([id]);
      await waitFor(`the handler to record ${id}`, () => existsSync(record) && readFileSync(record, 'utf8').includes(id), 20_000, 100);
      const metrics = await (await fetch(`${base}/metrics`)).text();
      expect(metrics).toMatch(/durable_worker_events_total\{type="source_entry.updated",outcome="ok"\} [1-9]/);
      expect(metrics).toContain('durable_worker_pulls_total{status="200"}');
      cli.kill('SIGTERM');
      const result = await cli.exited;
      expect(result.code, result.stderr).toBe(0);
    } finally {
      cli.kill('SIGKILL');
    }
  });
});
