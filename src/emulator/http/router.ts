import type { IncomingMessage, ServerResponse } from 'node:http';

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** What a route handler receives. `params` are decoded path segments named in the pattern. */
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
 * What a handler returns: a JSON reply, or nothing when it wrote the response itself.
 * `body: undefined` with status 204 writes no body.
 */
export interface RouteReply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export type RouteHandler = (request: RouteRequest) => RouteReply | void | Promise<RouteReply | void>;

interface Route {
  method: Method;
  segments: string[];
  handler: RouteHandler;
}

export interface RouteMatch {
  handler: RouteHandler;
  params: Record<string, string>;
}

/**
 * A deliberately small router: patterns like `/v1/event-destinations/:id/pull`, matched segment by
 * segment. The emulator has a few dozen routes, so a linear scan is cheaper than any trie.
 */
export class Router {
  private readonly routes: Route[] = [];

  add(method: Method, pattern: string, handler: RouteHandler): this {
    this.routes.push({ method, segments: split(pattern), handler });
    return this;
  }

  /** `undefined` = no route for the path; `{ allow }` = path known, not for this method (the methods it takes). */
  match(method: string, path: string): RouteMatch | { allow: Method[] } | undefined {
    const segments = split(path);
    const allow: Method[] = [];
    for (const route of this.routes) {
      const params = matchSegments(route.segments, segments);
      if (!params) continue;
      if (route.method !== method) {
        if (!allow.includes(route.method)) allow.push(route.method);
        continue;
      }
      return { handler: route.handler, params };
    }
    return allow.length > 0 ? { allow } : undefined;
  }
}

function split(path: string): string[] {
  return path.split('/').filter((s) => s.length > 0);
}

function matchSegments(pattern: string[], actual: string[]): Record<string, string> | undefined {
  if (pattern.length !== actual.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < pattern.length; i++) {
    const p = pattern[i]!;
    const a = actual[i]!;
    if (p.startsWith(':')) {
      try {
        params[p.slice(1)] = decodeURIComponent(a);
      } catch {
        return undefined;
      }
    } else if (p !== a) {
      return undefined;
    }
  }
  return params;
}
