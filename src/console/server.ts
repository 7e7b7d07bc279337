import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { HttpProblem, problemBody } from '../emulator/http/problem.js';
import { ConfigError } from '../errors.js';
import { listenError } from '../runtime/listen-error.js';
import { createLocalServerGuard, type LocalServerGuard } from '../runtime/local-server-guard.js';
import type { ApiRoute } from './api.js';
import type { PageFiles } from './page-files.js';

export interface ConsoleServerOptions {
  host: string;
  port: number;
  /** When the port was not chosen by the user, a taken one is not an error: another free port is used. */
  portIsDefault: boolean;
  routes: ApiRoute[];
  page: PageFiles;
  /** Serves `/api/stream` (server-sent events). */
  stream: (res: ServerResponse) => void;
  logger: Logger;
  /** Host names besides the loopback ones the console answers (`--allowed-hosts`). */
  allowedHosts?: readonly string[];
  /** Origins besides its own whose pages may change state (`--allowed-origins`). */
  allowedOrigins?: readonly string[];
}

export interface ConsoleServer {
  url: string;
  port: number;
  close(): Promise<void>;
}

/**
 * The page can replay and purge dead letters and inject faults, with no login: only pages served
 * from this machine may call it. The guard of every local server (runtime/local-server-guard.ts)
 * refuses a `Host` or request target other than a loopback name or an allowed one (another site's
 * page resolving its own name to 127.0.0.1, "DNS rebinding") and a change from a page of another
 * origin; a change must also come as JSON (readJson), which a cross-site form cannot send.
 */
function guard(req: IncomingMessage, res: ServerResponse, localGuard: LocalServerGuard): void {
  const refusal = localGuard.admit(req, res);
  if (refusal !== undefined) throw new HttpProblem(refusal.status, refusal.message);
}

/** JSON answers are data, never a document: not sniffed as HTML, nothing runs or loads in them. */
const JSON_SECURITY_HEADERS = {
  'x-content-type-options': 'nosniff',
  'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
  'referrer-policy': 'no-referrer',
};

function sendJson(res: ServerResponse, status: number, body: unknown, type = 'application/json'): void {
  const text = body === undefined ? '' : JSON.stringify(body);
  res.writeHead(status, {
    'content-type': `${type}; charset=utf-8`,
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
    ...JSON_SECURITY_HEADERS,
  });
  res.end(text);
}

async function handle(options: ConsoleServerOptions, localGuard: LocalServerGuard, req: IncomingMessage, res: ServerResponse): Promise<void> {
  guard(req, res, localGuard);
  const url = new URL(req.url ?? '/', 'http://console');
  const path = url.pathname;
  if (!path.startsWith('/api/')) {
    if (req.method !== 'GET' && req.method !== 'HEAD') throw new HttpProblem(405, `${req.method} is not allowed on ${path.slice(0, 200)}`);
    const file = options.page.get(path);
    if (file === undefined) throw new HttpProblem(404, `no page file ${path.slice(0, 200)}`);
    res.writeHead(200, { ...file.headers, 'content-length': file.body.length });
    res.end(req.method === 'HEAD' ? undefined : file.body);
    return;
  }
  if (path === '/api/stream' && req.method === 'GET') return options.stream(res);
  const candidates = options.routes.map((route) => ({ route, match: route.path.exec(path) })).filter((c) => c.match !== null);
  if (candidates.length === 0) throw new HttpProblem(404, `no route ${path.slice(0, 200)}`);
  const found = candidates.find((c) => c.route.method === req.method);
  if (found === undefined) throw new HttpProblem(405, `${req.method} is not allowed on ${path.slice(0, 200)}`);
  let params: string[];
  try {
    params = found.match!.slice(1).map((p) => decodeURIComponent(p));
  } catch {
    throw new HttpProblem(400, `not a valid path: ${path.slice(0, 200)}`);
  }
  const reply = await found.route.handle({ req, params, query: url.searchParams });
  sendJson(res, reply.status, reply.body);
}

function answerError(res: ServerResponse, req: IncomingMessage, err: unknown, logger: Logger): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const problem = err instanceof HttpProblem ? err : new HttpProblem(500, 'the console failed to answer (see the dev log)');
  if (!(err instanceof HttpProblem)) logger.error({ err, method: req.method, path: req.url }, 'console request failed');
  sendJson(res, problem.status, problemBody(problem.status, problem.detail, (req.url ?? '/').split('?')[0]!, problem.errors), 'application/problem+json');
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

/** The console's HTTP server: the page's files, its JSON API and its event stream. */
export async function startConsoleServer(options: ConsoleServerOptions): Promise<ConsoleServer> {
  const { host, logger } = options;
  const localGuard = createLocalServerGuard({ allowedHosts: options.allowedHosts ?? [], allowedOrigins: options.allowedOrigins ?? [] });
  const server = createServer((req, res) => {
    handle(options, localGuard, req, res).catch((err: unknown) => answerError(res, req, err, logger));
  });
  server.keepAliveTimeout = 5_000;
  let port = options.port;
  try {
    await listen(server, port, host);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    // Like a dev server's default port (Vite's): taken by another dev process, take a free one instead.
    if (code !== 'EADDRINUSE' || !options.portIsDefault) throw await listenError(err, '--console-port', host, port);
    logger.warn({ port }, `console: port ${port} is taken, using a free one instead (--console-port to choose)`);
    await listen(server, 0, host);
  }
  server.on('error', (err) => logger.error({ err }, 'console server error'));
  port = (server.address() as AddressInfo).port;
  const shownHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${shownHost}:${port}`,
    port,
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}
