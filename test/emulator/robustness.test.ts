import { connect } from 'node:net';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readJson } from '../../src/emulator/http/body.js';
import { problem } from '../../src/emulator/openapi/responses.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { call, startTestEmulator, testOperation, type TestEmulator } from './helpers.js';

const PROBLEM_FIELDS = ['type', 'title', 'status', 'detail', 'instance', 'traceId'];

function expectProblem(res: { status: number; headers: Record<string, unknown>; body: any }, status: number): void {
  expect(res.status).toBe(status);
  expect(res.headers['content-type']).toBe('application/problem+json');
  for (const field of PROBLEM_FIELDS) expect(res.body).toHaveProperty(field);
  expect(res.body.status).toBe(status);
  expect(res.body.traceId).toMatch(/^[0-9a-f]{32}$/);
}

describe('emulator robustness: bad input is a problem, never a crash', () => {
  let t: TestEmulator;
  beforeEach(async () => {
    t = await startTestEmulator({ maxBodyBytes: 2048 });
  });
  afterEach(async () => {
    await t.close();
  });
  const ackUrl = () => `${t.em.url}/v1/event-destinations/dev-consumer/acknowledge`;

  it('answers malformed JSON with 400 and errors', async () => {
    const res = await call('POST', ackUrl(), { headers: { ...t.auth, 'content-type': 'application/json' }, body: '{"leaseId": ' });
    expectProblem(res, 400);
    expect(res.body.errors).toHaveProperty('$');
  });

  it('answers a body that is not an object with 400', async () => {
    const res = await t.ack([1, 2, 3]);
    expectProblem(res, 400);
  });

  it('answers another content type with 415', async () => {
    const res = await call('POST', ackUrl(), { headers: { ...t.auth, 'content-type': 'text/plain' }, body: 'ok' });
    expectProblem(res, 415);
  });

  it('answers an oversized body with 413', async () => {
    const res = await call('POST', ackUrl(), { headers: t.auth, json: { leaseId: 'x'.repeat(5000), generation: 1, status: 'ok' } });
    expectProblem(res, 413);
  });

  it('answers an unknown route with 404 and a wrong method with 405', async () => {
    expectProblem(await call('GET', `${t.em.url}/v1/nothing-here`), 404);
    const wrongMethod = await call('GET', `${t.em.url}/v1/event-destinations/dev-consumer/pull`, { headers: t.auth });
    expectProblem(wrongMethod, 405);
    expect(wrongMethod.headers.allow).toBe('POST');
    expect((await call('DELETE', `${t.em.url}/acme/pub/v1/products`)).headers.allow).toBe('GET, POST');
  });

  it('keeps serving on the same keep-alive connection after errors', async () => {
    for (let i = 0; i < 5; i++)
      expect((await call('POST', ackUrl(), { headers: { ...t.auth, 'content-type': 'application/json' }, body: '{' })).status).toBe(400);
    t.append(1);
    expect((await t.pull({ workerId: 'w1' })).status).toBe(200);
  });

  it('survives a garbage request line', async () => {
    await new Promise<void>((resolve) => {
      const socket = connect(t.em.port, '127.0.0.1', () => socket.end('NOT HTTP AT ALL\r\n\r\n'));
      socket.on('close', () => resolve());
      socket.on('error', () => resolve());
      socket.resume();
    });
    expect((await t.pull({ workerId: 'w1' })).status).toBe(204);
  });
});

describe('emulator unexpected errors', () => {
  it('turns an exception into a logged 500 problem and keeps running', async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(line) });
    const em = await startEmulator({
      port: 0,
      logger,
      modules: [
        (ctx) =>
          ctx.router.add(testOperation('GET', '/v1/boom', { '500': problem('The exception, as a problem.') }), () => {
            throw new Error('kaboom');
          }),
      ],
    });
    try {
      const res = await call('GET', `${em.url}/v1/boom`);
      expectProblem(res, 500);
      expect(res.text).not.toContain('kaboom');
      expect(lines.join('')).toContain('kaboom');
      expect((await call('GET', `${em.url}/_emulator/state`)).status).toBe(200);
    } finally {
      await em.close();
    }
  });

  it('a client that hangs up mid-body is a debug line, not an error, and the emulator goes on', async () => {
    const lines: { level: number; msg: string }[] = [];
    const logger = pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    let bodyRead!: (outcome: string) => void;
    const settled = new Promise<string>((resolve) => (bodyRead = resolve));
    const em = await startEmulator({
      port: 0,
      logger,
      modules: [
        (ctx) =>
          ctx.router.add(testOperation('POST', '/v1/slow-body'), async ({ req }) => {
            try {
              await readJson(req);
              return { status: 204 };
            } finally {
              // Let the server's error path run first: it is what the assertion is about.
              setImmediate(() => bodyRead('settled'));
            }
          }),
      ],
    });
    try {
      const socket = connect(em.port, '127.0.0.1', () => {
        socket.write('POST /v1/slow-body HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"half":');
        setImmediate(() => socket.destroy());
      });
      socket.on('error', () => {});
      expect(await settled).toBe('settled');
      expect(lines.filter((line) => line.level >= 50)).toEqual([]);
      expect((await call('GET', `${em.url}/_emulator/state`)).status).toBe(200);
    } finally {
      await em.close();
    }
  });

  it('appendEvents refuses an event without a type or subject instead of storing unparsable JSON', async () => {
    const em = await startEmulator({ port: 0 });
    try {
      expect(() => em.appendEvents('dev-tenant', [{ type: 'ok.type', subject: 's', data: 1 }, { subject: 's', data: 2 } as never])).toThrow(/type/);
      expect(em.state().tenants.find((t) => t.id === 'dev-tenant')?.head).toBeNull();
    } finally {
      await em.close();
    }
  });

  it('closes idempotently, keep-alive sockets included', async () => {
    const em = await startEmulator({ port: 0 });
    await call('GET', `${em.url}/_emulator/state`);
    await Promise.all([em.close(), em.close()]);
    await em.close();
    await expect(call('GET', `${em.url}/_emulator/state`)).rejects.toThrow();
  });
});

describe('emulator fault injection', () => {
  let em: RunningEmulator;
  afterEach(async () => {
    await em.close();
  });

  async function statuses(url: string, count: number, path = '/v1/event-destinations/dev-consumer/pull'): Promise<number[]> {
    const out: number[] = [];
    for (let i = 0; i < count; i++) out.push((await call('POST', `${url}${path}`, { headers: { 'x-api-key': 'dev-api-key' } })).status);
    return out;
  }

  it('injects 5xx problems at the configured rate, replayable from the seed', async () => {
    em = await startEmulator({ port: 0, faults: { seed: 42, errorRate: 0.5, errorRoutes: ['pull'] } });
    const first = await statuses(em.url, 40);
    expect(first.filter((s) => s === 503).length).toBeGreaterThan(5);
    expect(first.filter((s) => s === 204).length).toBeGreaterThan(5);
    em.faults.set({ seed: 42, errorRate: 0.5, errorRoutes: ['pull'] });
    expect(await statuses(em.url, 40)).toEqual(first);
    // Other families are untouched.
    expect(new Set(await statuses(em.url, 10, '/v1/event-destinations/dev-consumer/acknowledge'))).toEqual(new Set([415]));
  });

  it('throttles in bursts with Retry-After and can be set and cleared over HTTP', async () => {
    em = await startEmulator({ port: 0 });
    const set = await call('POST', `${em.url}/_emulator/faults`, { json: { seed: 7, throttle: { rate: 1, burst: 3, retryAfterSeconds: 2 } } });
    expect(set.status).toBe(200);
    const res = await call('POST', `${em.url}/v1/event-destinations/dev-consumer/pull`, { headers: { 'x-api-key': 'dev-api-key' } });
    expectProblem(res, 429);
    expect(res.headers['retry-after']).toBe('2');
    expect((await call('DELETE', `${em.url}/_emulator/faults`)).status).toBe(204);
    expect(await statuses(em.url, 3)).toEqual([204, 204, 204]);
    const bad = await call('POST', `${em.url}/_emulator/faults`, { json: { errorRate: 2 } });
    expectProblem(bad, 400);
    expect(bad.body.errors).toHaveProperty('errorRate');
  });

  it('drops connections without answering and delays answers', async () => {
    em = await startEmulator({ port: 0, faults: { dropRate: 1, dropRoutes: ['token'], latencyMs: 60_000, latencyRoutes: ['pull'] } });
    await expect(call('POST', `${em.url}/oauth2/token`, { body: '' })).rejects.toThrow();
    // A delayed pull stays unanswered while requests sent after it, on other routes, are answered.
    const pending = new AbortController();
    let answered = false;
    const delayed = fetch(`${em.url}/v1/event-destinations/dev-consumer/pull`, {
      method: 'POST',
      headers: { 'x-api-key': 'dev-api-key' },
      signal: pending.signal,
    }).then(
      () => void (answered = true),
      () => {},
    );
    for (let i = 0; i < 3; i++) expect((await call('GET', `${em.url}/_emulator/state`)).status).toBe(200);
    expect(answered).toBe(false);
    pending.abort();
    await delayed;
    // Delayed, then served.
    em.faults.set({ latencyMs: 50, latencyRoutes: ['pull'] });
    expect(await statuses(em.url, 1)).toEqual([204]);
  });
});
