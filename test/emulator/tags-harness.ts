import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { EmulatorContext, Principal } from '../../src/emulator/context.js';
import { HttpProblem, sendProblem } from '../../src/emulator/http/problem.js';
import { Router, type Method } from '../../src/emulator/http/router.js';

/**
 * A tiny HTTP server around the emulator Router with a fake EmulatorContext, for the feature
 * modules' tests before they are wired into the emulator server. The fake credential is the
 * `x-test-tenant` header (with `x-test-scopes` and `x-test-sources`, comma-separated).
 */
export interface Harness {
  ctx: EmulatorContext;
  baseUrl: string;
  close(): Promise<void>;
}

export function fakeAuthenticate(req: IncomingMessage, anyOfScopes: readonly string[]): Principal {
  const tenant = req.headers['x-test-tenant'];
  if (typeof tenant !== 'string' || tenant === '') throw new HttpProblem(401, 'No credential.');
  const scopes = new Set(String(req.headers['x-test-scopes'] ?? '').split(',').filter(Boolean));
  if (anyOfScopes.length > 0 && !anyOfScopes.some((s) => scopes.has(s))) throw new HttpProblem(403, 'Missing scope.');
  const rawSources = req.headers['x-test-sources'];
  const sources = typeof rawSources === 'string' ? new Set(rawSources.split(',').filter(Boolean)) : ('all' as const);
  return { kind: 'application', tenant, clientId: 'test', scopes, sources, dataProvider: rawSources !== undefined };
}

export async function startHarness(register: (ctx: EmulatorContext) => void): Promise<Harness> {
  const router = new Router();
  const ctx: EmulatorContext = {
    router,
    authenticate: fakeAuthenticate,
    appendEvents: () => [],
    maxBodyBytes: 1024 * 1024,
  };
  register(ctx);
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const match = router.match(req.method ?? 'GET', url.pathname);
    if (match === undefined) return sendProblem(res, 404, 'No route.', url.pathname);
    if ('allow' in match) return sendProblem(res, 405, 'Method not allowed.', url.pathname);
    Promise.resolve()
      .then(() =>
        match.handler({ req, res, method: req.method as Method, path: url.pathname, params: match.params, query: url.searchParams }),
      )
      .then((reply) => {
        if (!reply) return;
        const payload = reply.body === undefined ? '' : JSON.stringify(reply.body);
        res.writeHead(reply.status, { ...(payload ? { 'content-type': 'application/json' } : {}), ...reply.headers });
        res.end(payload);
      })
      .catch((err: unknown) => {
        if (err instanceof HttpProblem) return sendProblem(res, err.status, err.detail, url.pathname, err.errors, err.headers);
        sendProblem(res, 500, String(err), url.pathname);
      });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    ctx,
    baseUrl: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
