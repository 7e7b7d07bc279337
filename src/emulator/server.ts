import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import { gzipSync } from 'node:zlib';
import type { Logger } from 'pino';
import { stringifyJsonExact } from '../ingest/index.js';
import { createLocalServerGuard, type LocalServerGuard } from '../runtime/local-server-guard.js';
import type { FaultInjector } from './faults/injector.js';
import type { RouteFamily } from './faults/options.js';
import { exchangeObserver } from './http/exchange-observer.js';
import { HttpProblem, problemBody } from './http/problem.js';
import type { Method, RouteReply, Router } from './http/router.js';
import type { OperationSpec } from './openapi/operation.js';

/**
 * The emulator's one HTTP server: public API and issuer on the same origin, as a client is configured
 * with one base URL. Every error is problem+json; bad input never crashes it, and an unexpected
 * exception is logged and becomes a 500 problem while the server keeps serving.
 */

export const ADMIN_PREFIX = '/_emulator';

const LOOPBACK_ONLY = createLocalServerGuard();

export interface ServerDeps {
  router: Router;
  faults: FaultInjector;
  logger: Logger;
  /** The Host, request-target and Origin rules of every local server (runtime/local-server-guard.ts). Default: loopback names, own origin. */
  guard?: LocalServerGuard;
}

/** Route family of a request, for fault injection. */
export function routeFamily(method: string, path: string): RouteFamily {
  if (path === '/oauth2/token') return 'token';
  if (path.startsWith('/v1/event-destinations/')) {
    if (path.endsWith('/pull')) return 'pull';
    if (path.endsWith('/acknowledge')) return 'ack';
  }
  if (method === 'POST' && (path.startsWith('/sources/') || path.startsWith('/datasources/'))) return 'ingest';
  if (method === 'GET') return 'read';
  return 'other';
}

function isLoopback(req: IncomingMessage): boolean {
  const address = req.socket.remoteAddress ?? '';
  return address === '::1' || address.startsWith('127.') || address.startsWith('::ffff:127.');
}

/**
 * The one place an answer leaves the emulator: every reply and every problem is written here, so
 * the exchange observer (tests) sees all of them.
 */
function writeAnswer(
  req: IncomingMessage,
  res: ServerResponse,
  operation: OperationSpec | undefined,
  status: number,
  headers: Record<string, string>,
  payload: string | undefined,
  gzip = false,
): void {
  const out: Record<string, string | number> = { ...headers };
  // A string is written as is (no copy of a large lease batch); only a compressed answer is a Buffer.
  let entity: string | Buffer | undefined;
  if (payload !== undefined && status !== 204 && status !== 304) {
    entity = payload;
    out['content-type'] ??= 'application/json';
    if (gzip) {
      out.vary = 'Accept-Encoding';
      if (acceptsGzip(req.headers['accept-encoding'])) {
        entity = gzipSync(Buffer.from(payload, 'utf8'));
        out['content-encoding'] = 'gzip';
      }
    }
    out['content-length'] = typeof entity === 'string' ? Buffer.byteLength(entity) : entity.length;
  }
  res.writeHead(status, out);
  res.end(entity);
  const observer = exchangeObserver();
  if (observer) {
    const names: Record<string, string> = {};
    for (const [name, value] of Object.entries(out)) names[name.toLowerCase()] = String(value);
    observer({ method: req.method ?? 'GET', path: pathOf(req), operation, status, headers: names, body: entity === undefined ? undefined : payload });
  }
}

function sendReply(req: IncomingMessage, res: ServerResponse, operation: OperationSpec, reply: RouteReply): void {
  // Exact: a read of an Integer beyond 2^53 carries a bigint (sources/read-shape.ts).
  const payload = reply.json ?? (reply.body === undefined ? undefined : stringifyJsonExact(reply.body));
  writeAnswer(req, res, operation, reply.status, reply.headers ?? {}, payload, reply.gzip);
}

function sendProblem(req: IncomingMessage, res: ServerResponse, operation: OperationSpec | undefined, problem: HttpProblem): void {
  const body = problemBody(problem.status, problem.detail, pathOf(req), problem.errors);
  // A body we refused to read (413) is not worth draining: close the connection after answering.
  const headers = problem.status === 413 ? { ...problem.headers, connection: 'close' } : { ...problem.headers };
  writeAnswer(req, res, operation, problem.status, { ...headers, 'content-type': 'application/problem+json' }, JSON.stringify(body));
}

/** Spec: compression is opt-in via `Accept-Encoding: gzip`. */
export function acceptsGzip(header: string | undefined): boolean {
  if (!header) return false;
  return header.split(',').some((part) => {
    const [coding, ...params] = part.trim().toLowerCase().split(';');
    if (coding !== 'gzip' && coding !== 'x-gzip') return false;
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    return q === undefined || Number(q.slice(2)) > 0;
  });
}

function pathOf(req: IncomingMessage): string {
  return (req.url ?? '/').split('?')[0]!;
}

/** The request's route, kept on the request so a problem answered later names its operation. */
const OPERATION = Symbol('operation');
type RoutedRequest = IncomingMessage & { [OPERATION]?: OperationSpec };

async function dispatch(deps: ServerDeps, req: IncomingMessage, res: ServerResponse): Promise<void> {
  // Before anything else, faults included: a page that rebound its own name to this machine, or
  // another site's page, must not append events, mint tokens or change faults. It also turns an
  // absolute-form target into the path read below.
  const refusal = (deps.guard ?? LOOPBACK_ONLY).admit(req, res);
  if (refusal !== undefined) throw new HttpProblem(refusal.status, refusal.message);
  const url = req.url ?? '/';
  const queryAt = url.indexOf('?');
  const path = queryAt < 0 ? url : url.slice(0, queryAt);
  const method = req.method ?? 'GET';
  const match = deps.router.match(method, path);
  if (match !== undefined && !('allow' in match)) (req as RoutedRequest)[OPERATION] = match.operation;

  if (path === ADMIN_PREFIX || path.startsWith(`${ADMIN_PREFIX}/`)) {
    // Seeding endpoints need no credential, so they are loopback only (and never faulted, so tests can switch faults off).
    if (!isLoopback(req)) throw new HttpProblem(403, 'Emulator endpoints answer loopback clients only.');
  } else if (deps.faults.enabled) {
    const decision = deps.faults.decide(routeFamily(method, path));
    if (decision.delayMs > 0) await delay(decision.delayMs);
    switch (decision.kind) {
      case 'drop':
        req.socket.destroy();
        return;
      case 'error':
        throw new HttpProblem(decision.status, 'Injected fault: the service is temporarily unavailable.');
      case 'throttle':
        throw new HttpProblem(429, 'Injected fault: too many requests.', undefined, { 'retry-after': String(decision.retryAfterSeconds) });
      case 'serve':
        break;
    }
  }

  if (match === undefined) throw new HttpProblem(404, `No route for ${path.slice(0, 200)}.`);
  // RFC 9110: a 405 lists the methods the resource does take.
  if ('allow' in match) throw new HttpProblem(405, `${method} is not allowed on ${path.slice(0, 200)}.`, undefined, { allow: match.allow.join(', ') });
  const reply = await match.handler({
    req,
    res,
    method: method as Method,
    path,
    params: match.params,
    query: new URLSearchParams(queryAt < 0 ? '' : url.slice(queryAt + 1)),
  });
  sendReply(req, res, match.operation, reply);
}

function answerError(deps: ServerDeps, req: IncomingMessage, res: ServerResponse, err: unknown): void {
  const instance = (req.url ?? '/').split('?')[0]!;
  if (clientWentAway(req, err)) {
    // Not the emulator's failure: the client closed the connection mid-request (a killed worker, a
    // timeout). Nothing can be answered.
    deps.logger.debug({ method: req.method, path: instance, code: (err as { code?: unknown } | null)?.code }, 'client closed the connection mid-request');
    res.destroy();
    return;
  }
  if (res.headersSent || res.destroyed) {
    if (!(err instanceof HttpProblem)) deps.logger.error({ err, method: req.method, path: instance }, 'emulator route failed after answering');
    res.destroy();
    return;
  }
  const operation = (req as RoutedRequest)[OPERATION];
  if (err instanceof HttpProblem) {
    sendProblem(req, res, operation, err);
    return;
  }
  deps.logger.error({ err, method: req.method, path: instance }, 'emulator route failed');
  sendProblem(req, res, operation, new HttpProblem(500, 'An unexpected error occurred in the emulator.'));
}

const CLIENT_GONE_CODES = new Set(['ECONNRESET', 'ECONNABORTED', 'EPIPE', 'ERR_STREAM_PREMATURE_CLOSE']);

function clientWentAway(req: IncomingMessage, err: unknown): boolean {
  if (err instanceof HttpProblem) return false;
  const code = (err as { code?: unknown } | null)?.code;
  return req.socket.destroyed || (typeof code === 'string' && CLIENT_GONE_CODES.has(code));
}

export function createEmulatorServer(deps: ServerDeps): Server {
  const server = createServer({ keepAlive: true }, (req, res) => {
    dispatch(deps, req, res).catch((err: unknown) => answerError(deps, req, res, err));
  });
  // Longer than common client idle timeouts (undici: 4 s), so clients close idle sockets first and
  // never write into a socket the server is closing.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  return server;
}
