import type * as z from 'zod';

/**
 * What a route declares about itself, next to its handler (`router.add(operation, handler)`): the
 * OpenAPI operation of the emulator's description (document.ts) and the contract its answers are
 * checked against in tests (test/setup/emulator-responses.ts). Schemas are the zod schemas the
 * emulator validates requests with, and for answers the registered wire schemas (components.ts).
 *
 * Statuses every route of a kind can answer are not declared route by route; the document adds
 * them (see `impliedResponses` in document.ts): 401 for a credential, 403 for a scope, 400/413/415
 * for a JSON body, 429 and 5XX where fault injection reaches, 403 on emulator-only routes.
 */

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** Groups of the document; `Emulator only` holds the loopback-only seeding endpoints (src/emulator/admin/routes.ts). */
export type OperationTag =
  'Issuer' | 'Ingest' | 'Sources' | 'Managed tags' | 'Access catalog' | 'Durable consumers' | 'Destinations' | 'Descriptions' | 'Emulator only';

/**
 * Who may call:
 * - `tenant`: a tenant bearer token or an organization API key (spec, Authentication 1-3).
 *   `scopes`: the credential must hold one of them (403 otherwise); none = any valid credential.
 *   `apiKey: false` when an API key is refused.
 * - `destination`: public destinations need nothing, protected ones a destination token or an issuer
 *   token for the API version ID (spec, Authentication 8).
 * - `none`: no credential (the issuer, published descriptions, the emulator's own endpoints).
 */
export type OperationSecurity = { kind: 'tenant'; scopes: readonly string[] } | { kind: 'destination' } | { kind: 'none' };

export interface ResponseHeader {
  description: string;
  schema: z.ZodType;
  required?: boolean;
}

/** One declared answer. Without `schema` the answer has no body (204, 302). */
export interface ResponseSpec {
  description: string;
  /** A registered wire schema (components.ts); its `id` names it in the document. */
  schema?: z.ZodType;
  /** Default `application/json`. */
  mediaType?: string;
  headers?: Record<string, ResponseHeader>;
  example?: unknown;
}

export interface RequestBodySpec {
  /** A registered wire schema (components.ts). */
  schema: z.ZodType;
  /** Default `application/json`. */
  mediaType?: 'application/json' | 'application/x-www-form-urlencoded';
  /** Default true. A JSON body that may be absent (destination POST queries) says false. */
  required?: boolean;
  example?: unknown;
}

export interface ParameterSpec {
  schema: z.ZodType;
  description: string;
  /** Default false for query parameters (path parameters are always required). */
  required?: boolean;
  example?: unknown;
}

export interface OperationSpec {
  method: Method;
  /** OpenAPI path template, `/v1/event-destinations/{id}/pull`; the router matches the same template. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tag: OperationTag;
  security: OperationSecurity;
  /** Every `{name}` of the path, described. Array query parameters are repeated (`id=a&id=b`). */
  pathParameters?: Record<string, ParameterSpec>;
  query?: Record<string, ParameterSpec>;
  /** Request headers the operation reads (e.g. a `traceparent`), by name. */
  headers?: Record<string, ParameterSpec>;
  /**
   * Query parameters beyond the named ones are accepted (destination GET queries: each is an Equal
   * filter on the property of that name). Described by this schema for every value.
   */
  freeformQuery?: { name: string; description: string; schema: z.ZodType };
  requestBody?: RequestBodySpec;
  /** Route-specific answers, by status (`'200'`, `'404'`...). Implied ones are added by the document. */
  responses: Record<string, ResponseSpec>;
  /** Implied statuses this route never answers (typed ingest reports an oversized body as a 400, not a 413). */
  omitImplied?: readonly string[];
}

/** Path parameters of the template, in order. */
export function pathParameterNames(path: string): string[] {
  return [...path.matchAll(/\{([^}]+)\}/g)].map((match) => match[1]!);
}
