/**
 * Every local server of a real `durable-worker dev` process (emulator, console, metrics) and the
 * standalone `durable-worker emulator` refuse a request for a name a web page could have pointed at
 * 127.0.0.1 ("DNS rebinding"), on every route that changes something and on reads; loopback names
 * and the `--allowed-hosts` are answered.
 */
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiRoutes, type ApiDeps } from '../../src/console/api.js';
import { emulatorOperations } from '../../src/emulator/start.js';
import { LOOPBACK_HOSTS, REBINDING_HOSTS } from '../fixtures/host-names.js';
import { tempDir } from '../worker/harness.js';
import { CliProcess, REPO_ROOT } from './cli-process.js';

const HANDLERS = join(REPO_ROOT, 'test/fixtures/cli-run-handlers');

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** A request with the Host and Origin a browser on a rebound name would send (undici's fetch would not let a test set Host). */
function send(base: string, method: string, path: string, headers: Record<string, string>, body?: string): Promise<Answer> {
  const url = new URL(path, base);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname + url.search,
        method,
        headers: { ...(body === undefined ? {} : { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) }), ...headers },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** A request written byte for byte (two Host headers, an absolute-form target): the status and the headers of the answer. */
function sendRaw(base: string, head: string, body = ''): Promise<{ status: number; head: string }> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname);
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      text += chunk;
      const end = text.indexOf('\r\n\r\n');
      if (end >= 0) {
        socket.destroy();
        resolve({ status: Number(text.split(' ')[1]), head: text.slice(0, end).toLowerCase() });
      }
    });
    socket.on('error', reject);
    socket.write(`${head.replace(/\n/g, '\r\n')}\r\n\r\n${body}`);
  });
}

/** Every state-changing operation of the emulator, with its path parameters filled in. */
const EMULATOR_CHANGES = emulatorOperations()
  .filter((operation) => operation.method !== 'GET')
  .map((operation) => ({ method: operation.method, path: operation.path.replace('{tenant}', 'dev-tenant').replace(/\{[^}]+\}/g, 'x') }));

/** Every state-changing route of the console's API (counted against its route table below). */
const CONSOLE_CHANGES = [
  { method: 'POST', path: '/api/consumer/pause' },
  { method: 'POST', path: '/api/consumer/resume' },
  { method: 'PUT', path: '/api/faults' },
  { method: 'DELETE', path: '/api/faults' },
  { method: 'POST', path: '/api/dead-letters/replay' },
  { method: 'POST', path: '/api/dead-letters/purge' },
  { method: 'POST', path: '/api/send' },
];

/** A local app's page that `dev` was told to take changes from (`--allowed-origins`). */
const LOCAL_APP = 'http://localhost:5173';

const EVENTS_BODY = JSON.stringify({ events: [{ type: 'source_entry.updated', subject: 'x', data: null }] });

let dev: CliProcess;
let emulatorUrl: string;
let consoleUrl: string;
let metricsUrl: string;

beforeAll(async () => {
  const dir = tempDir('host-guard');
  // No --metrics-host: dev's default is loopback.
  dev = new CliProcess(
    [
      'dev',
      '--port',
      '0',
      '--console-port',
      '0',
      '--metrics-port',
      '0',
      '--allowed-origins',
      LOCAL_APP,
      '--handlers',
      HANDLERS,
      '--isolation',
      'none',
      '--idempotency',
      'memory',
      '--dead-letter',
      `file:${join(dir, 'dead.jsonl')}`,
    ],
    { cwd: dir },
  );
  [, emulatorUrl = ''] = await dev.waitForOutput(/emulator listening on (http:\/\/127\.0\.0\.1:\d+)/, 60_000);
  [, consoleUrl = ''] = await dev.waitForOutput(/Open the console: (http:\/\/127\.0\.0\.1:\d+)/, 60_000);
  [, metricsUrl = ''] = await dev.waitForOutput(/metrics at (http:\/\/127\.0\.0\.1:\d+)/, 60_000);
}, 90_000);

afterAll(async () => {
  dev?.kill('SIGTERM');
  const result = await dev?.exited;
  expect(result?.code, result?.stderr).toBe(0);
});

/** What a refused change could have altered: streams, sources, destinations (paused or not), faults. */
async function changeableState(): Promise<unknown> {
  const state = JSON.parse((await send(emulatorUrl, 'GET', '/_emulator/state', {})).body) as {
    tenants: Array<{ id: string; head: string | null; sources: unknown; destinations: unknown }>;
    faults: unknown;
  };
  return { tenants: state.tenants.map(({ id, head, sources, destinations }) => ({ id, head, sources, destinations })), faults: state.faults };
}

describe('dev: a request for a rebound name gets 403 on every local server', () => {
  it('the route tables are the ones the test walks', () => {
    expect(EMULATOR_CHANGES.length).toBeGreaterThan(15);
    const changes = apiRoutes({} as ApiDeps).filter((route) => route.method !== 'GET');
    for (const route of changes)
      expect(
        CONSOLE_CHANGES.some((c) => c.method === route.method && route.path.test(c.path)),
        String(route.path),
      ).toBe(true);
    for (const change of CONSOLE_CHANGES)
      expect(
        changes.some((route) => change.method === route.method && route.path.test(change.path)),
        change.path,
      ).toBe(true);
  });

  it("every state-changing route, with the page's own Origin: 403 and nothing changed", async () => {
    const before = await changeableState();
    const servers: Array<[string, ReadonlyArray<{ method: string; path: string }>]> = [
      [emulatorUrl, EMULATOR_CHANGES],
      [consoleUrl, CONSOLE_CHANGES],
    ];
    for (const host of REBINDING_HOSTS) {
      for (const [base, routes] of servers) {
        for (const { method, path } of routes) {
          const answer = await send(base, method, path, { host, origin: `http://${host}` }, method === 'DELETE' ? undefined : '{}');
          expect(answer.status, `${method} ${base}${path} Host ${host}`).toBe(403);
          expect(answer.headers['content-type'], path).toContain('application/problem+json');
        }
      }
    }
    // The two requests, verbatim.
    const events = await send(
      emulatorUrl,
      'POST',
      '/_emulator/tenants/dev-tenant/events',
      { host: 'evil.example:8787', origin: 'http://evil.example:8787' },
      EVENTS_BODY,
    );
    expect(events.status).toBe(403);
    const pause = await send(consoleUrl, 'POST', '/api/consumer/pause', { host: '127.evil.example:8788', origin: 'http://127.evil.example:8788' }, '{}');
    expect(pause.status).toBe(403);
    expect(await changeableState()).toEqual(before);
  });

  it('reads too: the state, the events, the page and the metrics', async () => {
    for (const host of REBINDING_HOSTS) {
      for (const [base, path] of [
        [emulatorUrl, '/_emulator/state'],
        [emulatorUrl, '/v1/openapi'],
        [consoleUrl, '/'],
        [consoleUrl, '/api/events'],
        [consoleUrl, '/api/stream'],
        [metricsUrl, '/metrics'],
        [metricsUrl, '/readyz'],
      ] as const) {
        const answer = await send(base, 'GET', path, { host });
        expect(answer.status, `${base}${path} Host ${host}`).toBe(403);
      }
    }
  });

  it('loopback names, with or without a port, are answered', async () => {
    for (const host of LOOPBACK_HOSTS) {
      expect((await send(emulatorUrl, 'GET', '/_emulator/state', { host })).status, host).toBe(200);
      expect((await send(consoleUrl, 'GET', '/api/info', { host })).status, host).toBe(200);
      expect((await send(metricsUrl, 'GET', '/metrics', { host })).status, host).toBe(200);
    }
    const port = new URL(emulatorUrl).port;
    const appended = await send(
      emulatorUrl,
      'POST',
      '/_emulator/tenants/dev-tenant/events',
      { host: `localhost:${port}`, origin: `http://localhost:${port}` },
      EVENTS_BODY,
    );
    expect(appended.status).toBe(201);
    const consoleHost = new URL(consoleUrl).host;
    const resumed = await send(consoleUrl, 'POST', '/api/consumer/resume', { host: consoleHost, origin: `http://${consoleHost}` }, '{}');
    expect(resumed.status, resumed.body).toBe(200);
  });

  it('a cross-site Origin on a loopback Host is refused (a page elsewhere posting to 127.0.0.1)', async () => {
    const host = new URL(emulatorUrl).host;
    const answer = await send(emulatorUrl, 'POST', '/_emulator/tenants/dev-tenant/events', { host, origin: 'http://evil.example' }, EVENTS_BODY);
    expect(answer.status).toBe(403);
  });

  it('two Host headers: 400 from every server, even when both are loopback names', async () => {
    for (const base of [emulatorUrl, consoleUrl, metricsUrl]) {
      const path = base === consoleUrl ? '/api/info' : base === metricsUrl ? '/metrics' : '/_emulator/state';
      for (const [first, second] of [
        ['127.0.0.1', 'evil.example'],
        ['evil.example', '127.0.0.1'],
        ['localhost', 'localhost'],
      ]) {
        const answer = await sendRaw(base, `GET ${path} HTTP/1.1\nHost: ${first}\nHost: ${second}\nConnection: close`);
        expect(answer.status, `${base} ${first} ${second}`).toBe(400);
        expect(answer.head).toContain('x-content-type-options: nosniff');
      }
    }
  });

  it('an absolute-form target: its authority is checked like Host, and a loopback one is served by its path', async () => {
    const before = await changeableState();
    for (const base of [emulatorUrl, consoleUrl, metricsUrl]) {
      const host = new URL(base).host;
      const path = base === consoleUrl ? '/api/info' : base === metricsUrl ? '/metrics' : '/_emulator/state';
      for (const authority of REBINDING_HOSTS) {
        const answer = await sendRaw(base, `GET http://${authority}${path} HTTP/1.1\nHost: ${host}\nConnection: close`);
        expect(answer.status, `${base} ${authority}`).toBe(403);
      }
      expect((await sendRaw(base, `GET http://${host}${path} HTTP/1.1\nHost: ${host}\nConnection: close`)).status, base).toBe(200);
    }
    const port = new URL(emulatorUrl).port;
    const change = await sendRaw(
      emulatorUrl,
      `POST http://evil.example:${port}/_emulator/tenants/dev-tenant/events HTTP/1.1\nHost: 127.0.0.1:${port}\nContent-Type: application/json\nContent-Length: ${EVENTS_BODY.length}\nConnection: close`,
      EVENTS_BODY,
    );
    expect(change.status).toBe(403);
    expect(await changeableState()).toEqual(before);
  });

  it("a change from another local server's page (the console's origin on the emulator, another port) is refused", async () => {
    const before = await changeableState();
    const consoleOrigin = new URL(consoleUrl).origin;
    const emulatorHost = new URL(emulatorUrl).host;
    for (const origin of [consoleOrigin, 'http://127.0.0.1:3000', `http://localhost:${new URL(emulatorUrl).port}`, `https://${emulatorHost}`]) {
      const answer = await send(emulatorUrl, 'POST', '/_emulator/tenants/dev-tenant/events', { host: emulatorHost, origin }, EVENTS_BODY);
      expect(answer.status, origin).toBe(403);
    }
    const fromEmulator = await send(consoleUrl, 'POST', '/api/consumer/pause', { host: new URL(consoleUrl).host, origin: new URL(emulatorUrl).origin }, '{}');
    expect(fromEmulator.status).toBe(403);
    const crossSite = await send(
      emulatorUrl,
      'POST',
      '/_emulator/tenants/dev-tenant/events',
      { host: emulatorHost, 'sec-fetch-site': 'cross-site' },
      EVENTS_BODY,
    );
    expect(crossSite.status).toBe(403);
    expect(await changeableState()).toEqual(before);
  });

  it("--allowed-origins: dev's emulator and console take changes from that page", async () => {
    const appended = await send(
      emulatorUrl,
      'POST',
      '/_emulator/tenants/dev-tenant/events',
      { host: new URL(emulatorUrl).host, origin: LOCAL_APP },
      EVENTS_BODY,
    );
    expect(appended.status, appended.body).toBe(201);
    const resumed = await send(consoleUrl, 'POST', '/api/consumer/resume', { host: new URL(consoleUrl).host, origin: LOCAL_APP }, '{}');
    expect(resumed.status, resumed.body).toBe(200);
  });

  it('nosniff on every answer of the emulator and the metrics server, refusals included', async () => {
    for (const [base, path] of [
      [emulatorUrl, '/v1/openapi'],
      [emulatorUrl, '/_emulator/state'],
      [emulatorUrl, '/no/such/route'],
      [metricsUrl, '/metrics'],
      [metricsUrl, '/readyz'],
      [metricsUrl, '/nothing'],
    ] as const) {
      expect((await send(base, 'GET', path, {})).headers['x-content-type-options'], `${base}${path}`).toBe('nosniff');
      expect((await send(base, 'GET', path, { host: 'evil.example' })).headers['x-content-type-options'], `${base}${path} refused`).toBe('nosniff');
    }
  });

  it("the console's JSON answers are never sniffed nor framed", async () => {
    const answer = await send(consoleUrl, 'GET', '/api/info', {});
    expect(answer.headers['x-content-type-options']).toBe('nosniff');
    expect(answer.headers['content-security-policy']).toContain("default-src 'none'");
    const refused = await send(consoleUrl, 'GET', '/api/info', { host: 'evil.example' });
    expect(refused.headers['x-content-type-options']).toBe('nosniff');
  });
});

describe('durable-worker emulator --allowed-hosts', () => {
  it('answers the allowed name (another container reaching it by its service name) and refuses others', async () => {
    const emulator = new CliProcess(['emulator', '--port', '0', '--allowed-hosts', 'emulator,.svc.example']);
    try {
      const [, url = ''] = await emulator.waitForOutput(/emulator listening on (http:\/\/127\.0\.0\.1:\d+)/, 60_000);
      const port = new URL(url).port;
      for (const host of [`emulator:${port}`, 'emulator', `dw.ns.svc.example:${port}`]) {
        expect((await send(url, 'POST', '/_emulator/tenants/dev-tenant/events', { host }, EVENTS_BODY)).status, host).toBe(201);
        const form = new URLSearchParams({
          grant_type: 'client_credentials',
          client_id: 'dev-client',
          client_secret: 'dev-secret',
          audience: 'dev-tenant',
        }).toString();
        const token = await send(url, 'POST', '/oauth2/token', { host, 'content-type': 'application/x-www-form-urlencoded' }, form);
        expect(token.status, `${host} ${token.body}`).toBe(200);
      }
      for (const host of ['emulator.evil.example', `evil.example:${port}`, '127.0.0.1.evil.example']) {
        expect((await send(url, 'POST', '/_emulator/tenants/dev-tenant/events', { host }, EVENTS_BODY)).status, host).toBe(403);
      }
    } finally {
      emulator.kill('SIGTERM');
      await emulator.exited;
    }
  }, 90_000);

  it("--allowed-origins lets a local app's page change the emulator, and no other page", async () => {
    const emulator = new CliProcess(['emulator', '--port', '0', '--allowed-origins', 'http://localhost:5173']);
    try {
      const [, url = ''] = await emulator.waitForOutput(/emulator listening on (http:\/\/127\.0\.0\.1:\d+)/, 60_000);
      const host = new URL(url).host;
      expect((await send(url, 'POST', '/_emulator/tenants/dev-tenant/events', { host, origin: 'http://localhost:5173' }, EVENTS_BODY)).status).toBe(201);
      expect((await send(url, 'POST', '/_emulator/tenants/dev-tenant/events', { host, origin: 'http://localhost:5174' }, EVENTS_BODY)).status).toBe(403);
    } finally {
      emulator.kill('SIGTERM');
      await emulator.exited;
    }
  }, 90_000);

  it('a bad --allowed-origins exits 2 naming the option', async () => {
    const emulator = new CliProcess(['emulator', '--port', '0', '--allowed-origins', 'localhost:5173']);
    const result = await emulator.exited;
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/--allowed-origins must be origins/);
  }, 60_000);

  it('a bad --allowed-hosts exits 2 naming the option', async () => {
    const emulator = new CliProcess(['emulator', '--port', '0', '--allowed-hosts', 'http://emulator:8787']);
    const result = await emulator.exited;
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/--allowed-hosts must be host names without scheme or port/);
  }, 60_000);
});
