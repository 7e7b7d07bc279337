import { getEventListeners, once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exchange } from '../../src/client/http.js';
import { ErrorCodes } from '../../src/errors.js';

// A real server: /slow answers after 5 s (or never, once the request is aborted), anything else at once.
let server: Server;
let origin: string;
const agent = new Agent({ connections: 2 });
beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.url === '/slow') {
      const timer = setTimeout(() => res.end('late'), 5_000);
      res.on('close', () => clearTimeout(timer));
      return;
    }
    res.end('{"ok":true}');
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await agent.close();
  server.closeAllConnections();
  server.close();
});

const get = (path: string, signal?: AbortSignal, timeoutMs = 10_000) =>
  exchange(agent, { url: new URL(path, origin), method: 'GET', headers: {}, signal, timeoutMs });

describe('exchange over real HTTP', () => {
  it('keeps one abort listener on a long-lived caller signal, however many requests it carries', async () => {
    const worker = new AbortController();
    for (let i = 0; i < 50; i++) expect((await get('/fast', worker.signal)).text).toBe('{"ok":true}');
    expect(getEventListeners(worker.signal, 'abort').length).toBeLessThanOrEqual(1);
  });

  it("rejects with the caller's reason as soon as the caller aborts mid-request", async () => {
    const caller = new AbortController();
    const reason = new Error('shutting down');
    const pending = get('/slow', caller.signal);
    // Aborts once the server has the request: mid-flight, not before it is sent.
    server.once('request', () => caller.abort(reason));
    await expect(pending).rejects.toBe(reason);
    // The connection pool still works afterwards.
    expect((await get('/fast')).text).toBe('{"ok":true}');
  });

  it('turns its own deadline into a NetworkError naming it', async () => {
    await expect(get('/slow', undefined, 100)).rejects.toMatchObject({ code: ErrorCodes.NETWORK, message: expect.stringContaining('within 100 ms') });
  });
});
