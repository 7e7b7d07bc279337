import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { startWorker, WORKER_TOKEN_SCOPE } from '../../src/worker/start.js';
import { appendBehave, consumerState, createConsumer, FAST, records, silent, tempDir, waitFor, workerConfig } from './harness.js';

interface TokenExchange {
  form: URLSearchParams;
  status: number;
  grantedScope: unknown;
}

let emulator: RunningEmulator;
let issuer: Server;
let issuerUrl: string;
const exchanges: TokenExchange[] = [];

/**
 * The emulator's own issuer behind a recording pass-through (the worker's --auth-url): every token
 * request form, as sent on the wire, and the scope the issuer granted.
 */
beforeAll(async () => {
  emulator = await startEmulator({ port: 0 });
  issuer = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      fetch(`${emulator.url}${req.url ?? '/'}`, { method: req.method, headers: { 'content-type': req.headers['content-type'] ?? '' }, body })
        .then(async (answer) => {
          const text = await answer.text();
          let granted: unknown;
          try {
            granted = (JSON.parse(text) as { scope?: unknown }).scope;
          } catch {
            granted = undefined;
          }
          exchanges.push({ form: new URLSearchParams(body), status: answer.status, grantedScope: granted });
          res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' }).end(text);
        })
        .catch((err: unknown) => res.writeHead(502).end(String(err)));
    });
  });
  await new Promise<void>((resolve) => issuer.listen(0, '127.0.0.1', resolve));
  issuerUrl = `http://127.0.0.1:${(issuer.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((resolve) => (issuer ? issuer.close(() => resolve()) : resolve()));
  await emulator?.close();
});

describe('the worker token (client credentials)', () => {
  it('asks for exactly scope=read:events and still pulls and acks against the emulator', async () => {
    exchanges.length = 0;
    const dir = tempDir('scope');
    const record = join(dir, 'effects.log');
    const destination = await createConsumer(emulator);
    const events = appendBehave(emulator, 5, () => ({ behaviour: 'ok', record }));
    const worker = await startWorker(workerConfig(emulator, destination, dir, { authUrl: issuerUrl, exitWhenIdle: true }), { logger: silent, timings: FAST });
    try {
      expect(await worker.done).toEqual({ reason: 'idle' });
    } finally {
      await worker.close();
    }

    expect(WORKER_TOKEN_SCOPE).toBe('read:events');
    expect(exchanges.length).toBeGreaterThanOrEqual(1);
    for (const { form, status, grantedScope } of exchanges) {
      expect(form.get('grant_type')).toBe('client_credentials');
      expect(form.get('audience')).toBe('dev-tenant');
      expect(form.getAll('scope')).toEqual(['read:events']);
      // dev-client may hold every scope; the issuer granted only the one asked for.
      expect(status).toBe(200);
      expect(grantedScope).toBe('read:events');
    }
    // A token holding read:events alone pulled and acknowledged every event.
    expect(new Set(records(record).map((r) => r.eventId))).toEqual(new Set(events.map((e) => e.id)));
    const state = consumerState(emulator, destination);
    expect(state.committed).toBe(state.head);
    expect(state.leased).toBe(0);
  });

  it('an application without read:events is refused at the issuer, and the log says which scope is missing', async () => {
    exchanges.length = 0;
    const clientId = `no-events-${randomUUID().slice(0, 8)}`;
    const seeded = await fetch(`${emulator.url}/_emulator/applications`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ clientId, clientSecret: 'no-events-secret', scopes: ['write:sources'] }),
    });
    expect(seeded.status).toBe(201);
    const lines: string[] = [];
    const logger = pino({ level: 'error' }, { write: (line: string) => void lines.push(line) });
    const dir = tempDir('scope-refused');
    const destination = await createConsumer(emulator);
    const config = workerConfig(emulator, destination, dir, { authUrl: issuerUrl, clientId, clientSecret: 'no-events-secret' });
    const worker = await startWorker(config, { logger, timings: FAST });
    try {
      await waitFor('the configuration error log line', () => lines.find((l) => l.includes('configuration error')));
      expect(lines.join('\n')).toContain('the token issuer refused scope read:events: the application (--client-id) must have it');
      expect(worker.ready).toBe(false);
      expect(exchanges[0]?.form.getAll('scope')).toEqual(['read:events']);
      expect(exchanges[0]?.status).toBe(400);
    } finally {
      await worker.close();
    }
  });

  it('leaves the client default alone: createClient without scope sends none', async () => {
    exchanges.length = 0;
    const client = createClient({ baseUrl: emulator.url, authUrl: issuerUrl, tenant: 'dev-tenant', clientId: 'dev-client', clientSecret: 'dev-secret' });
    try {
      await client.token();
    } finally {
      await client.close();
    }
    expect(exchanges).toHaveLength(1);
    expect(exchanges[0]?.form.has('scope')).toBe(false);
    expect(String(exchanges[0]?.grantedScope).split(' ')).toEqual(expect.arrayContaining(['read:events', 'write:sources']));
  });
});
