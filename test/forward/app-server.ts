/**
 * A small real HTTP app for forwarding tests: records every request it receives and answers with
 * the status that the test chose for the event (looked up by `ce-id`, or by `id` in a structured body).
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** Client port: equal ports across requests mean one reused keep-alive connection. */
  remotePort: number;
  /** Event id taken from `ce-id` (binary) or the JSON body's `id` (structured). */
  eventId: string | undefined;
}

/** A status code, or 'hang' to never answer (the client's deadline must fire). */
export type AppBehaviour = number | 'hang';

export interface TestApp {
  url: string;
  port: number;
  received: ReceivedRequest[];
  /** Behaviour per event id; events without one get `defaultBehaviour`. */
  behaviours: Map<string, AppBehaviour | AppBehaviour[]>;
  defaultBehaviour: AppBehaviour;
  /** Resolves when `count` requests have arrived (poll-free: resolved from the request handler). */
  waitForRequests(count: number, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

function eventIdOf(headers: IncomingHttpHeaders, body: string): string | undefined {
  const header = headers['ce-id'];
  if (typeof header === 'string') return decodeURIComponent(header);
  try {
    const parsed = JSON.parse(body) as { id?: unknown };
    return typeof parsed.id === 'string' ? parsed.id : undefined;
  } catch {
    return undefined;
  }
}

export async function startTestApp(path = '/events'): Promise<TestApp> {
  const received: ReceivedRequest[] = [];
  const waiters: Array<{ count: number; resolve: () => void }> = [];
  const hanging = new Set<import('node:http').ServerResponse>();
  const app: TestApp = {
    url: '',
    port: 0,
    received,
    behaviours: new Map(),
    defaultBehaviour: 200,
    waitForRequests(count, timeoutMs = 10_000) {
      if (received.length >= count) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`app got ${received.length} of ${count} requests`)), timeoutMs);
        waiters.push({
          count,
          resolve: () => {
            clearTimeout(timer);
            resolve();
          },
        });
      });
    },
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const eventId = eventIdOf(req.headers, body);
      received.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, body, eventId, remotePort: req.socket.remotePort ?? 0 });
      for (const w of waiters.filter((x) => received.length >= x.count)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
      let behaviour: AppBehaviour = app.defaultBehaviour;
      const chosen = eventId === undefined ? undefined : app.behaviours.get(eventId);
      if (Array.isArray(chosen)) behaviour = chosen.length > 1 ? (chosen.shift() as AppBehaviour) : (chosen[0] ?? behaviour);
      else if (chosen !== undefined) behaviour = chosen;
      if (new URL(req.url ?? '/', 'http://x').pathname !== path) behaviour = 404;
      if (behaviour === 'hang') {
        hanging.add(res);
        return;
      }
      res.writeHead(behaviour, { 'content-type': 'text/plain' }).end(`status ${behaviour}`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  app.port = (server.address() as AddressInfo).port;
  app.url = `http://127.0.0.1:${app.port}${path}`;
  return app;
}
