import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { CliProcess } from '../cli/cli-process.js';
import { appendBehave, BEHAVIOURS, createConsumer, tempDir, waitFor } from '../worker/harness.js';

/**
 * A `durable-worker run` child at debug level, with a known client secret, faults that make it log
 * errors, and handlers that dead-letter: neither the secret nor the access token it was issued may
 * appear in stdout/stderr, /metrics or the dead-letter file. The token is captured by a small issuer
 * proxy (--auth-url) that forwards to the emulator and keeps what it answered.
 */
const CLIENT_ID = 'secrets-client';
const SECRET = `s3cr3t-${randomBytes(12).toString('hex')}`;

let emulator: RunningEmulator;
let proxy: Server;
let proxyUrl: string;
const issuedTokens: string[] = [];

beforeAll(async () => {
  emulator = await startEmulator({ port: 0, tokenLifetimeSeconds: 60, config: { applications: [{ clientId: CLIENT_ID, clientSecret: SECRET }] } });
  proxy = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    const relay = async () => {
      const answer = await request(`${emulator.url}${req.url ?? '/'}`, {
        method: 'POST',
        headers: { 'content-type': String(req.headers['content-type']) },
        body: Buffer.concat(chunks),
      });
      const text = await answer.body.text();
      const token = (JSON.parse(text) as { access_token?: string }).access_token;
      if (token !== undefined) issuedTokens.push(token);
      res.writeHead(answer.statusCode, { 'content-type': String(answer.headers['content-type']) });
      res.end(text);
    };
    // A relay that fails answers 502: the client under test sees a failing issuer, not a hung one.
    req.on('end', () => void relay().catch(() => res.writeHead(502).end()));
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
});
afterAll(async () => {
  proxy?.closeAllConnections();
  await new Promise((resolve) => proxy?.close(resolve));
  await emulator?.close();
});

function runArgs(destination: string, dir: string, secret: string): string[] {
  return [
    'run',
    '--base-url',
    emulator.url,
    '--auth-url',
    proxyUrl,
    '--tenant',
    'dev-tenant',
    '--client-id',
    CLIENT_ID,
    '--client-secret',
    secret,
    '--destination',
    destination,
    '--handlers',
    BEHAVIOURS,
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
    '--max-attempts',
    '2',
    '--log-level',
    'debug',
  ];
}

function leaks(text: string, secrets: readonly string[]): string[] {
  return secrets.filter((s) => text.includes(s)).map((s) => `${s.slice(0, 6)}... found`);
}

describe('no secret in logs, errors, metrics or dead letters', () => {
  it('a run at debug level with faults and dead letters never shows the client secret or its token', async () => {
    const dir = tempDir('secrets');
    const destination = await createConsumer(emulator, 'secrets');
    const record = join(dir, 'effects.log');
    appendBehave(emulator, 20, (i) => (i % 4 === 0 ? { behaviour: 'permanent' } : i % 4 === 1 ? { behaviour: 'fail' } : { record }));
    // 5xx and dropped connections on pull and ack: error objects (with their requests) get logged.
    emulator.faults.set({ seed: 3, errorRate: 0.3, dropRate: 0.05, routes: ['pull', 'ack'] });
    const cli = new CliProcess(runArgs(destination, dir, SECRET));
    try {
      const [, metricsUrl] = await cli.waitForOutput(/metrics at (http:\/\/127\.0\.0\.1:\d+\/metrics)/);
      await waitFor(
        'every event handled',
        () => existsSync(join(dir, 'dead-letter.jsonl')) && readFileSync(join(dir, 'dead-letter.jsonl'), 'utf8').split('\n').filter(Boolean).length === 10,
        30_000,
      );
      const metrics = await (await fetch(metricsUrl!)).text();
      expect(metrics).toContain('durable_worker_events_total');
      cli.kill('SIGTERM');
      const result = await cli.exited;
      expect(result.code, result.stderr).toBe(0);

      expect(issuedTokens.length).toBeGreaterThan(0);
      const secrets = [SECRET, ...issuedTokens];
      const output = result.stdout + result.stderr;
      // The run really logged at debug, echoed its config and logged failed requests.
      expect(output).toMatch(/"level":20/);
      expect(output).toContain('starting durable-worker');
      expect(output).toMatch(/pull failed|acknowledge failed/);
      expect(leaks(output, secrets)).toEqual([]);
      expect(leaks(metrics, secrets)).toEqual([]);
      expect(leaks(readFileSync(join(dir, 'dead-letter.jsonl'), 'utf8'), secrets)).toEqual([]);
      // The config echo says which credential is used, not its value.
      const echo = output.split('\n').find((line) => line.includes('starting durable-worker')) ?? '';
      expect(echo).toContain('client-credentials');
      expect(echo).not.toContain(SECRET);
    } finally {
      emulator.faults.clear();
      cli.kill('SIGKILL');
    }
  }, 60_000);

  it('a refused secret is reported without echoing it', async () => {
    const dir = tempDir('secrets-bad');
    const wrong = `wrong-${randomBytes(12).toString('hex')}`;
    const cli = new CliProcess(runArgs('dev-consumer', dir, wrong));
    try {
      await cli.waitForOutput(/configuration error/);
      cli.kill('SIGTERM');
      const result = await cli.exited;
      const output = result.stdout + result.stderr;
      expect(output).toMatch(/client credentials/);
      expect(leaks(output, [wrong, SECRET])).toEqual([]);
    } finally {
      cli.kill('SIGKILL');
    }
  }, 30_000);

  it('redacts authorization and x-api-key headers and secret fields nested in logged objects', async () => {
    const { createLogger } = await import('../../src/observability/logger.js');
    const lines: string[] = [];
    const logger = createLogger({ level: 'debug', pretty: false, destination: { write: (line: string) => void lines.push(line) } });
    const token = `tok-${randomBytes(8).toString('hex')}`;
    logger.debug(
      {
        err: { request: { headers: { authorization: `Bearer ${token}`, 'x-api-key': SECRET } } },
        config: { clientSecret: SECRET },
        response: { access_token: token },
      },
      'request failed',
    );
    logger.flush();
    expect(lines.join('')).toContain('request failed');
    expect(leaks(lines.join(''), [SECRET, token])).toEqual([]);
  });
});
