import type { IncomingMessage } from 'node:http';
import type { CloudEvent } from '../types.js';
import type { Router } from './http/router.js';

/**
 * The narrow seams between the emulator's parts. The server (server.ts) owns authentication and
 * the tenants' event streams; feature modules (sources, consumers, tags, destinations...) register
 * routes and see only this context.
 */

/** Who is calling, derived only from the credential (spec: tenant identity never comes from route or body). */
export interface Principal {
  kind: 'application' | 'api-key';
  tenant: string;
  /** Client id of an application; undefined for an API key. */
  clientId?: string;
  /** Granted scopes. An organization API key holds every tenant scope. */
  scopes: ReadonlySet<string>;
  /** Sources this credential may write: every source, or the listed ones. */
  sources: 'all' | ReadonlySet<string>;
  /** Legacy data-provider application (restricted to its assigned sources; `import-datasource`). */
  dataProvider: boolean;
}

export interface NewEvent {
  type: string;
  subject: string;
  data: unknown;
  /** W3C trace context for the CloudEvents distributed tracing extension (the emulator's choice: see ingest.ts). */
  traceparent?: string;
  tracestate?: string;
}

export interface EmulatorContext {
  router: Router;
  /**
   * Authenticates the request (Bearer token or `x-api-key`). Throws HttpProblem 401 without a valid
   * credential, 403 when `anyOfScopes` is non-empty and the credential holds none of them.
   */
  authenticate(req: IncomingMessage, anyOfScopes: readonly string[]): Principal;
  /** Appends events to the tenant's stream (sequence assigned here); every durable consumer of the tenant sees them. */
  appendEvents(tenant: string, events: readonly NewEvent[]): CloudEvent[];
  /** Body ceiling for JSON requests, in bytes. */
  maxBodyBytes: number;
}
