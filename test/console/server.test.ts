/**
 * The console's server over real HTTP, against a real emulator and a real dead-letter sink: the
 * page's files, the JSON API with its refusals (problem+json, `errors` by path), the guards of a
 * page with no login, and the event stream.
 */
import { createServer } from 'node:net';
import { join } from 'node:path';
import pino from 'pino';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DevConsole } from '../../src/console/index.js';
import { openDeadLetterStore } from '../../src/dead-letter/index.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { deadLetter } from '../dead-letter/contract.js';
import { capturingLogger, tempDir, waitFor } from '../worker/harness.js';
import { consoleOptions, type ConsoleStartOptions } from './console-options.js';

const PREFIX = 'dev-tenant:dev-consumer';
let emulator: RunningEmulator;
let devConsole: DevConsole;
let url: string;
let sinkUrl: string;

function startOptions(overrides: Partial<ConsoleStartOptions> = {}): ConsoleStartOptions {
  return consoleOptions(emulator.url, sinkUrl, { idempotencyPrefix: PREFIX, ...overrides });
}

beforeAll(async () => {
  emulator = await startEmulator({ port: 0, logger: pino({ level: 'silent' }) });
  sinkUrl = `file:${join(tempDir('console-sink'), 'dead-letter.jsonl')}`;
  const sink = await openDeadLetterStore(sinkUrl, { prefix: PREFIX });
  await sink.write(deadLetter({ eventId: 'e-1', handler: 'shop', type: 'console.test', data: { n: 1 } }));
  await sink.write(deadLetter({ eventId: 'e-2', handler: 'shop', type: 'console.test', data: { n: 2 } }));
  await sink.close();
  devConsole = new DevConsole({ maxEvents: 10 });
  url = await devConsole.start(startOptions());
});

afterAll(async () => {
  await devConsole?.close();
  await emulator?.close();
});

async function call(method: string, path: string, options: { json?: unknown; headers?: Record<string, string>; body?: string } = {}) {
  const headers: Record<string, string> = { ...options.headers };
  let body = options.body;
  if (options.json !== undefined) {
    headers['content-type'] ??= 'application/json';
    body = JSON.stringify(options.json);
  }
  const res = await request(`${url}${path}`, { method: method as 'GET', headers, body });
  const text = await res.body.text();
  const type = String(res.headers['content-type'] ?? '');
  return { status: res.statusCode, headers: res.headers, type, text, body: type.includes('json') && text !== '' ? JSON.parse(text) : undefined };
}

describe('the page', () => {
  it('serves its files with a content security policy that runs nothing but them', async () => {
    const index = await call('GET', '/');
    expect(index.status).toBe(200);
    expect(index.type).toContain('text/html');
    expect(index.text).toContain('<script type="module" src="/app.js">');
    expect(index.headers['content-security-policy']).toContain("script-src 'self'");
    const app = await call('GET', '/app.js');
    expect(app.type).toContain('text/javascript');
    expect(app.text).toContain("import { Store } from './store.js'");
  });

  it('serves only the files it read at start: no path reaches the disk', async () => {
    for (const path of ['/../package.json', '/%2e%2e/package.json', '/page-files.ts', '/nothing.js']) {
      const res = await call('GET', path);
      expect(res.status, path).toBe(404);
      expect(res.type, path).toContain('application/problem+json');
    }
  });
});

describe('guards of a page with no login', () => {
  it('answers loopback names only (another name resolving to 127.0.0.1 is refused)', async () => {
    expect((await call('GET', '/api/info', { headers: { host: 'evil.example:8788' } })).status).toBe(403);
    expect((await call('GET', '/api/info', { headers: { host: `localhost:${new URL(url).port}` } })).status).toBe(200);
  });

  it('takes changes as JSON from its own origin only', async () => {
    const foreign = await call('POST', '/api/consumer/pause', { json: {}, headers: { origin: 'http://evil.example' } });
    expect(foreign.status).toBe(403);
    const form = await call('POST', '/api/consumer/pause', { headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'a=1' });
    expect(form.status).toBe(415);
    expect(emulator.state().tenants[0]!.consumers[0]!.paused).toBe(false);
  });
});

describe('the consumer', () => {
  it('pauses and resumes the consumer in the emulator', async () => {
    const paused = await call('POST', '/api/consumer/pause', { json: {}, headers: { origin: url } });
    expect(paused.status).toBe(200);
    expect(paused.body.consumer).toMatchObject({ destination: 'dev-consumer', reachable: true, paused: true });
    expect(emulator.state().tenants[0]!.consumers[0]!.paused).toBe(true);
    const resumed = await call('POST', '/api/consumer/resume', { json: {} });
    expect(resumed.body.consumer.paused).toBe(false);
  });

  it("sets the fault toggles it manages, keeps the others, and shows the emulator's refusals by field", async () => {
    emulator.faults.set({ throttle: { rate: 0.01 } });
    try {
      const set = await call('PUT', '/api/faults', { json: { errorRate: 0.5, errorRoutes: ['ack'], latencyMs: 20 } });
      expect(set.status).toBe(200);
      expect(emulator.state().faults).toEqual({ throttle: { rate: 0.01 }, errorRate: 0.5, errorRoutes: ['ack'], latencyMs: 20 });
      // null: every route again.
      await call('PUT', '/api/faults', { json: { errorRoutes: null } });
      expect(emulator.state().faults).toEqual({ throttle: { rate: 0.01 }, errorRate: 0.5, latencyMs: 20 });

      const refused = await call('PUT', '/api/faults', { json: { errorRate: 2, latencyMs: -1 } });
      expect(refused.status).toBe(400);
      expect(refused.type).toContain('application/problem+json');
      expect(Object.keys(refused.body.errors).sort()).toEqual(['errorRate', 'latencyMs']);
      const unknown = await call('PUT', '/api/faults', { json: { dropRate: 1 } });
      expect(unknown.status).toBe(400);
      expect(Object.keys(unknown.body.errors)).toEqual(['$']);
    } finally {
      await call('DELETE', '/api/faults');
    }
    expect(emulator.state().faults).toEqual({});
  });

  it('reports the lease table and the lag', async () => {
    const appended = emulator.appendEvents(
      'dev-tenant',
      [1, 2, 3].map((n) => ({ type: 'console.test', subject: `s-${n}`, data: { n } })),
    );
    const token = (await (
      await fetch(`${emulator.url}/oauth2/token`, {
        method: 'POST',
        body: new URLSearchParams({ grant_type: 'client_credentials', client_id: 'dev-client', client_secret: 'dev-secret', audience: 'dev-tenant' }),
      })
    ).json()) as { access_token: string };
    const pulled = await fetch(`${emulator.url}/v1/event-destinations/dev-consumer/pull?limit=2&workerId=w-test&visibility=30`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token.access_token}` },
    });
    const lease = (await pulled.json()) as { leaseId: string };
    const view = await waitFor('a sample with the lease', async () => {
      const { body } = await call('GET', '/api/consumer');
      return body.consumer.leases.length === 1 ? body : undefined;
    });
    expect(view.consumer).toMatchObject({
      head: appended.at(-1)!.sequence,
      leased: 2,
      leases: [{ leaseId: lease.leaseId, workerId: 'w-test', firstSequence: appended[0]!.sequence, lastSequence: appended[1]!.sequence }],
    });
    expect(view.consumer.lag).toBeGreaterThanOrEqual(3);
    expect(view.lag.at(-1)).toEqual({ at: view.consumer.at, lag: view.consumer.lag });
  });
});

describe('send', () => {
  it('ingests an entry, whose event the emulator appends', async () => {
    const res = await call('POST', '/api/send', {
      json: { sourceId: 'console-send', entries: [{ id: 'p-1', properties: [{ id: 'name', value: 'Kettle' }] }] },
    });
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ sourceId: 'console-send', acceptedEntryCount: 1 });
    await emulator.idle();
    expect(emulator.state().tenants[0]!.sources.find((s) => s.id === 'console-send')).toMatchObject({ entryCount: 1 });
  });

  it("answers the emulator's validation errors, keyed by the request's paths", async () => {
    const res = await call('POST', '/api/send', {
      json: { sourceId: 'console-send', entries: [{ id: '', properties: [{ id: 'price', value: { nested: true } }] }] },
    });
    expect(res.status).toBe(400);
    expect(res.type).toContain('application/problem+json');
    expect(Object.keys(res.body.errors)).toEqual(expect.arrayContaining(['entries[0].id', 'entries[0].properties[0].value']));
    const noSource = await call('POST', '/api/send', { json: { sourceId: '', entries: [] } });
    expect(noSource.status).toBe(400);
    expect(noSource.body.errors.sourceId).toEqual(['a source ID is required']);
  });
});

describe('dead letters', () => {
  it('lists the records of the sink, replays one with the current handlers and purges another', async () => {
    const list = await call('GET', '/api/dead-letters');
    expect(list.body.records.map((r: { id: string; state: string }) => [r.id, r.state])).toEqual([
      ['shop:e-1', 'dead'],
      ['shop:e-2', 'dead'],
    ]);
    const replay = await call('POST', '/api/dead-letters/replay', { json: { ids: ['shop:e-1'] } });
    expect(replay.status).toBe(200);
    expect(replay.body).toEqual({ ok: true, results: [{ id: 'shop:e-1', handler: 'shop', eventId: 'e-1', outcome: 'replayed' }] });
    const purge = await call('POST', '/api/dead-letters/purge', { json: { ids: ['shop:e-2'] } });
    expect(purge.body).toEqual({ purged: ['shop:e-2'] });
    const all = await call('GET', '/api/dead-letters?state=all');
    expect(all.body.records.map((r: { id: string; state: string }) => [r.id, r.state])).toEqual([
      ['shop:e-1', 'replayed'],
      ['shop:e-2', 'purged'],
    ]);
    expect((await call('GET', '/api/dead-letters/shop%3Ae-1')).body).toMatchObject({ id: 'shop:e-1', state: 'replayed' });
  });

  it('refuses an unknown record, an empty selection and a bad state, naming what is wrong', async () => {
    const unknown = await call('POST', '/api/dead-letters/replay', { json: { ids: ['shop:nope'] } });
    expect(unknown.status).toBe(400);
    expect(unknown.body.detail).toContain('no dead-letter record "shop:nope"');
    const empty = await call('POST', '/api/dead-letters/purge', { json: { ids: [] } });
    expect(empty.body.errors).toEqual({ ids: ['select at least one record'] });
    const state = await call('GET', '/api/dead-letters?state=gone');
    expect(state.status).toBe(400);
    expect(Object.keys(state.body.errors)).toEqual(['$']);
    expect((await call('GET', '/api/dead-letters/shop%3Anope')).status).toBe(404);
  });
});

describe('the event stream', () => {
  it('greets a page with hello, the events, the consumer and the lag, then sends the consumer every second', async () => {
    const controller = new AbortController();
    const res = await fetch(`${url}/api/stream`, { signal: controller.signal });
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = '';
    try {
      await waitFor('the greeting and two consumer samples', async () => {
        const { value } = await reader.read();
        text += value ?? '';
        return (text.match(/^event: consumer$/gm) ?? []).length >= 2;
      });
    } finally {
      controller.abort();
    }
    expect(text.startsWith('retry: 1000\n\n')).toBe(true);
    const names = [...text.matchAll(/^event: (.+)$/gm)].map((m) => m[1]);
    expect(names.slice(0, 5)).toEqual(['hello', 'events', 'consumer', 'lag', 'consumer']);
    const hello = JSON.parse(/^event: hello\ndata: (.+)$/m.exec(text)![1]!);
    expect(hello).toMatchObject({ destination: 'dev-consumer', maxEvents: 10, deadLetterSink: sinkUrl });
  });
});

describe('its port', () => {
  async function takenPort(): Promise<{ port: number; close: () => void }> {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    return { port: (blocker.address() as { port: number }).port, close: () => blocker.close() };
  }

  it('a taken --console-port the user chose is a configuration error naming it', async () => {
    const taken = await takenPort();
    const other = new DevConsole({ maxEvents: 10 });
    try {
      await expect(other.start(startOptions({ port: taken.port }))).rejects.toMatchObject({
        code: 'DW_ERR_CONFIG',
        message: expect.stringMatching(
          new RegExp(
            `^--console-port: port ${taken.port} on 127\\.0\\.0\\.1 is taken \\(EADDRINUSE\\): choose another, e\\.g\\. --console-port \\d+ \\(free now\\), or --console-port 0 for any free one$`,
          ),
        ),
      });
    } finally {
      await other.close();
      taken.close();
    }
  });

  it('the default port, when taken, gives way to a free one, with a warning', async () => {
    const taken = await takenPort();
    const other = new DevConsole({ maxEvents: 10 });
    const { logger, messages } = capturingLogger('warn');
    try {
      const otherUrl = await other.start(startOptions({ port: taken.port, portIsDefault: true, logger }));
      expect(new URL(otherUrl).port).not.toBe(String(taken.port));
      expect((await fetch(`${otherUrl}/api/info`)).status).toBe(200);
      expect(messages()).toContain(`console: port ${taken.port} is taken, using a free one instead (--console-port to choose)`);
    } finally {
      await other.close();
      taken.close();
    }
  });
});
