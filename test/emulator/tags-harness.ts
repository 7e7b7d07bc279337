import type { IncomingMessage, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import type { EmulatorContext, Principal } from '../../src/emulator/context.js';
import { FaultInjector } from '../../src/emulator/faults/injector.js';
import { HttpProblem } from '../../src/emulator/http/problem.js';
import { Router } from '../../src/emulator/http/router.js';
import { createEmulatorServer } from '../../src/emulator/server.js';

/**
 * The emulator's HTTP server around one feature module's routes with a fake EmulatorContext, for
 * the feature modules' own tests. The fake credential is the
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
  const scopes = new Set(
    String(req.headers['x-test-scopes'] ?? '')
      .split(',')
      .filter(Boolean),
  );
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
  // The emulator's own server around the module's routes: same answers, same checks of them.
  const server: Server = createEmulatorServer({ router, faults: new FaultInjector(), logger: pino({ level: 'silent' }) });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    ctx,
    baseUrl: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
