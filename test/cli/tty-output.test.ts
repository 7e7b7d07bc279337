/**
 * `run` logs one start-up line with the effective configuration: JSON lines when stdout is a pipe
 * (test/docs/commands.test.ts checks that one), human-readable on a terminal. The terminal is a real
 * pseudo-terminal from `script` (util-linux, in Debian's essential bsdutils).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.js';
import { startEmulator } from '../../src/emulator/index.js';
import { REPO_ROOT } from './cli-process.js';

function quote(arg: string): string {
  return `'${arg.replace(/'/g, `'\\''`)}'`;
}

describe('run output on a terminal', () => {
  it('is human-readable, with one start-up line showing the configuration and no secret', async () => {
    const emulator = await startEmulator({ port: 0, logger: pino({ level: 'silent' }) });
    const dir = mkdtempSync(join(tmpdir(), 'dw-tty-'));
    try {
      const args = [
        'node',
        join(REPO_ROOT, 'bin', 'durable-worker.js'),
        'run',
        '--base-url',
        emulator.url,
        '--tenant',
        'dev-tenant',
        '--client-id',
        'dev-client',
        '--client-secret',
        'dev-secret',
        '--destination',
        'dev-consumer',
        '--handlers',
        join(REPO_ROOT, 'handlers'),
        '--exit-when-idle',
        '--metrics-port',
        '0',
        '--metrics-host',
        '127.0.0.1',
        '--idempotency',
        'memory',
        '--dead-letter',
        `file:${join(dir, 'dead.jsonl')}`,
        '--isolation',
        'none',
      ];
      const child = spawn('script', ['-qec', args.map(quote).join(' '), '/dev/null'], {
        cwd: dir,
        env: { ...process.env, NO_COLOR: '1' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
      const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
      // pino-pretty colours a terminal's output.
      out = out.replace(/\u001b\[[0-9;]*m/g, '');
      expect(code, out).toBe(0);
      const lines = out.split(/\r?\n/).filter((line) => line.includes('starting durable-worker'));
      expect(lines, out).toHaveLength(1);
      // pino-pretty: "[time] INFO (pid): message" then the fields on indented lines, not a JSON object.
      expect(lines[0]).toMatch(/INFO.*starting durable-worker/);
      expect(out).not.toMatch(/^\{"level"/m);
      expect(out).toMatch(/^\s+config: \{$/m);
      expect(out).toMatch(/"baseUrl": "http:\/\/127\.0\.0\.1:\d+"/);
      expect(out).toContain('"credential": "client-credentials"');
      expect(out).not.toContain('dev-secret');
    } finally {
      await emulator.close();
    }
  });

  it('handler threads write the same human-readable lines as the main thread (one format on one terminal)', async () => {
    const emulator = await startEmulator({ port: 0, logger: pino({ level: 'silent' }) });
    const dir = mkdtempSync(join(tmpdir(), 'dw-tty-threads-'));
    try {
      const client = createClient({ baseUrl: emulator.url, tenant: 'dev-tenant', clientId: 'dev-client', clientSecret: 'dev-secret' });
      await client.ingest('tty', { entries: [{ id: 'tty-1', properties: [{ id: 'name', value: 'Kettle' }] }] }).finally(() => client.close());
      const args = [
        'node',
        join(REPO_ROOT, 'bin', 'durable-worker.js'),
        'run',
        '--base-url',
        emulator.url,
        '--tenant',
        'dev-tenant',
        '--client-id',
        'dev-client',
        '--client-secret',
        'dev-secret',
        '--destination',
        'dev-consumer',
        '--handlers',
        join(REPO_ROOT, 'handlers'),
        '--exit-when-idle',
        '--metrics-port',
        '0',
        '--metrics-host',
        '127.0.0.1',
        '--idempotency',
        'memory',
        '--dead-letter',
        `file:${join(dir, 'dead.jsonl')}`,
        '--isolation',
        'thread',
      ];
      const child = spawn('script', ['-qec', args.map(quote).join(' '), '/dev/null'], {
        cwd: dir,
        env: { ...process.env, NO_COLOR: '1' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
      const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
      out = out.replace(/\u001b\[[0-9;]*m/g, '');
      expect(code, out).toBe(0);
      // The bundled handler's line, logged in a handler thread, pretty-printed on one line (the
      // handler's name, then its message; its fields only at --log-level debug).
      const lines = out.split(/\r?\n/);
      const at = lines.findIndex((line) => /INFO: entry-changes: entry tty-1 created$/.test(line));
      expect(at, out).toBeGreaterThanOrEqual(0);
      expect(lines[at + 1] ?? '', out).not.toMatch(/^\s+\w+: /);
      expect(out).not.toMatch(/^\{"level"/m);
    } finally {
      await emulator.close();
    }
  });
});
