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
    const segments = split(operation.path);
    if (segments === undefined) throw new Error(`route template ${operation.path} has an empty segment`);
    this.routes.push({ operation, segments, handler });
    return this;
  }

  /** Every registered operation, in registration order. */
  operations(): OperationSpec[] {
    return this.routes.map((route) => route.operation);
  }

  /**
   * `undefined` = no route for the path; `{ allow }` = path known, not for this method (the methods
   * it takes). As OpenAPI matches paths, a concrete segment wins over a template one:
   * `/{customer}/{destination}/v1/openapi` is its own resource (GET only), not an endpoint named
   * `openapi` of `/{customer}/{destination}/v1/{endpoint}`.
   */
  match(method: string, path: string): RouteMatch | { allow: Method[] } | undefined {
    const segments = split(path);
    if (segments === undefined) return undefined;
    let best: Array<{ route: Route; params: Record<string, string> }> = [];
    for (const route of this.routes) {
      const params = matchSegments(route.segments, segments);
      if (!params) continue;
      const order = best.length === 0 ? -1 : compareSpecificity(route.segments, best[0]!.route.segments);
      if (order < 0) best = [{ route, params }];
      else if (order === 0) best.push({ route, params });
    }
    if (best.length === 0) return undefined;
    const found = best.find(({ route }) => route.operation.method === method);
    if (found) return { operation: found.route.operation, handler: found.route.handler, params: found.params };
    return { allow: [...new Set(best.map(({ route }) => route.operation.method))] };
  }
}

/**
 * The segments of a path, or undefined when it has an empty one (`//v1//managed-tags`,
 * `/v1/managed-tags/`): the description lists no such path, so it names no resource.
 */
function split(path: string): string[] | undefined {
  if (!path.startsWith('/')) return undefined;
  const segments = path.slice(1).split('/');
  return segments.some((s) => s.length === 0) ? undefined : segments;
}

const isTemplate = (segment: string) => segment.startsWith('{');

/** < 0 when `a` is more specific than `b`: at the first segment where they differ in kind, `a` is concrete. */
function compareSpecificity(a: readonly string[], b: readonly string[]): number {
  for (let i = 0; i < a.length; i++) {
    const aTemplate = isTemplate(a[i]!);
    if (aTemplate !== isTemplate(b[i]!)) return aTemplate ? 1 : -1;
  }
  return 0;
}

function matchSegments(template: string[], actual: string[]): Record<string, string> | undefined {
  if (template.length !== actual.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < template.length; i++) {
    const t = template[i]!;
    const a = actual[i]!;
    if (isTemplate(t)) {
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
