import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Method, OperationSpec } from '../openapi/operation.js';

export type { Method } from '../openapi/operation.js';

/** What a route handler receives. `params` are decoded path segments named in the template. */
export interface RouteRequest {
  req: IncomingMessage;
  res: ServerResponse;
  method: Method;
  /** Path without the query string, as received. */
  path: string;
  params: Record<string, string>;
  query: URLSearchParams;
}

/**
 * What a handler returns. `body` is serialised as JSON (exactly, bigints included); `json` is a
 * body already serialised (the pull's lease batch, assembled from stored event texts). Without
 * either, no body is written (204, 302). `gzip` compresses when the client accepts it (the
 * destination queries: spec, compression is opt-in via `Accept-Encoding: gzip`).
 */
export interface RouteReply {
  status: number;
  body?: unknown;
  json?: string;
  headers?: Record<string, string>;
  gzip?: boolean;
}

export type RouteHandler = (request: RouteRequest) => RouteReply | Promise<RouteReply>;

interface Route {
  operation: OperationSpec;
  segments: string[];
  handler: RouteHandler;
}

export interface RouteMatch {
  operation: OperationSpec;
  handler: RouteHandler;
  params: Record<string, string>;
}

/**
 * A deliberately small router: templates like `/v1/event-destinations/{id}/pull`, matched segment
 * by segment, in registration order. The emulator has a few dozen routes, so a linear scan is
 * cheaper than any trie. Every route is an operation of the emulator's OpenAPI description: the
 * declaration travels with the handler, so the description lists exactly what is served.
 */
export class Router {
  private readonly routes: Route[] = [];

  add(operation: OperationSpec, handler: RouteHandler): this {
    this.routes.push({ operation, segments: split(operation.path), handler });
    return this;
  }

  /** Every registered operation, in registration order. */
  operations(): OperationSpec[] {
    return this.routes.map((route) => route.operation);
  }

  /** `undefined` = no route for the path; `{ allow }` = path known, not for this method (the methods it takes). */
  match(method: string, path: string): RouteMatch | { allow: Method[] } | undefined {
    const segments = split(path);
    const allow: Method[] = [];
    for (const route of this.routes) {
      const params = matchSegments(route.segments, segments);
      if (!params) continue;
      if (route.operation.method !== method) {
        if (!allow.includes(route.operation.method)) allow.push(route.operation.method);
        continue;
      }
      return { operation: route.operation, handler: route.handler, params };
    }
    return allow.length > 0 ? { allow } : undefined;
  }
}

function split(path: string): string[] {
  return path.split('/').filter((s) => s.length > 0);
}

function matchSegments(template: string[], actual: string[]): Record<string, string> | undefined {
  if (template.length !== actual.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < template.length; i++) {
    const t = template[i]!;
    const a = actual[i]!;
    if (t.startsWith('{')) {
      try {
        params[t.slice(1, -1)] = decodeURIComponent(a);
      } catch {
        return undefined;
      }
    } else if (t !== a) {
      return undefined;
    }
  }
  return params;
}
