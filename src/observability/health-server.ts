import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { ConfigError } from '../errors.js';
import { listenError } from '../runtime/listen-error.js';
import { createLocalServerGuard, type LocalServerGuard } from '../runtime/local-server-guard.js';
import { isLoopbackInterface } from '../runtime/loopback-guard.js';

export interface StartHealthServerOptions {
  /** 0 = a random free port (the chosen one is logged and returned). */
  port: number;
  /** Default 0.0.0.0 (reachable by the orchestrator's probes). */
  host?: string;
  registry: Registry;
  /** /readyz answers 200 when true (token obtained, handlers loaded), 503 otherwise. */
  isReady: () => boolean;
  /** Why it is not ready, for the 503's body (fixed texts and handler names only: no error message, which could carry a secret). */
  notReadyReason?: () => string | undefined;
  logger?: Logger;
  /**
   * Host names besides the loopback ones it answers (`--allowed-hosts`). Given, or when the server
   * listens on loopback (`dev`'s default), a request for any other name gets 403: a web page that
   * rebinds its own name to this machine reads no metrics. Absent on 0.0.0.0 (`run` in a pod),
   * every name is answered: probes and scrapers address the pod by its IP.
   */
  allowedHosts?: readonly string[];
}

export interface HealthServer {
  port: number;
  url: string;
  close(): Promise<void>;
}

function send(res: ServerResponse, status: number, body: string, contentType = 'text/plain; charset=utf-8'): void {
  res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(body), 'cache-control': 'no-store' });
  res.end(body);
}

function notReadyBody(reason: string | undefined): string {
  return reason === undefined ? 'not ready\n' : `not ready: ${reason}\n`;
}

async function handle(req: IncomingMessage, res: ServerResponse, options: StartHealthServerOptions, guard: LocalServerGuard): Promise<void> {
  const refusal = guard.admit(req, res);
  if (refusal !== undefined) return send(res, refusal.status, `${refusal.message}\n`);
  const path = new URL(req.url ?? '/', 'http://localhost').pathname;
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.setHeader('allow', 'GET, HEAD');
    return send(res, 405, 'method not allowed\n');
  }
  switch (path) {
    case '/healthz':
      // Liveness: the process answers. A stuck pull restarts itself (pull:crashed); it is not the kubelet's to restart.
      return send(res, 200, 'ok\n');
    case '/readyz':
      return options.isReady() ? send(res, 200, 'ready\n') : send(res, 503, notReadyBody(options.notReadyReason?.()));
    case '/metrics':
      return send(res, 200, await options.registry.metrics(), options.registry.contentType);
    default:
      return send(res, 404, 'not found\n');
  }
}

/** GET /healthz, /readyz and /metrics (docs/metrics.md). */
export async function startHealthServer(options: StartHealthServerOptions): Promise<HealthServer> {
  const host = options.host ?? '0.0.0.0';
  // The guard of every local server; in a pod (0.0.0.0 without --allowed-hosts) it answers every name.
  const guard = createLocalServerGuard(
    options.allowedHosts !== undefined || isLoopbackInterface(host) ? { allowedHosts: options.allowedHosts ?? [] } : { hosts: 'any' },
  );
  const server = createServer((req, res) => {
    handle(req, res, options, guard).catch((err: unknown) => {
      options.logger?.error({ err }, 'health server request failed');
      if (!res.headersSent) send(res, 500, 'internal error\n');
      else res.destroy();
    });
  });
  // Probes and scrapers keep connections alive; they must not hold shutdown open.
  server.keepAliveTimeout = 5_000;

  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      // A taken or forbidden port is a configuration problem (exit 2), not a crash.
      void listenError(err, '--metrics-port', host, options.port).then(reject);
    });
    server.listen(options.port, host, () => {
      server.removeAllListeners('error');
      server.on('error', (err) => options.logger?.error({ err }, 'health server error'));
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const shownHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  const url = `http://${shownHost}:${port}`;
  options.logger?.info({ port, host, url: `${url}/metrics` }, 'health and metrics server listening');

  let closing: Promise<void> | undefined;
  return {
    port,
    url,
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
      return closing;
    },
  };
}
