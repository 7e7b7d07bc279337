import type { IncomingMessage } from 'node:http';
import type { ReadEntry } from '../sources/read-shape.js';
import type { EmulatorContext } from '../context.js';
import { readBody, readJson } from '../http/body.js';
import { HttpProblem } from '../http/problem.js';
import type { RouteReply, RouteRequest } from '../http/router.js';
import { parseOrProblem } from '../http/validation.js';
import { assertLoopback } from '../tags/seeding.js';
import { destinationOpenApi } from './openapi.js';
import { parseGetQuery } from './query/params.js';
import { parsePostQuery } from './query/post-body.js';
import { runQuery } from './query/run.js';
import { DestinationRegistry, parseDestinationSeed, type DestinationConfig } from './registry.js';
import { DESCRIPTION, JSON_UTF8, QUERY_GET, QUERY_POST, SEED, TOKEN } from './operations.js';
import { DestinationTokenRequestSchema } from './schemas.js';
import { DestinationTokens } from './tokens.js';

export interface DestinationDeps {
  /** The entries of a source in the read shape (wired to the sources module). An unknown source yields nothing. */
  readSourceEntries(tenant: string, sourceId: string): Iterable<ReadEntry>;
  /** The registered application with these credentials, or undefined (wired to the emulator's applications). */
  verifyApplication(clientId: string, clientSecret: string): { tenant: string } | undefined;
  /**
   * Spec Authentication rule 8: a protected destination also accepts an issuer token whose audience
   * is the API version ID. Wired to the issuer; without it only destination tokens are accepted.
   */
  isIssuerTokenForAudience?(token: string, apiVersionId: string): boolean;
  /** Clock of token expiry and the token rate window, in epoch ms. Default `Date.now`. */
  nowMs?: () => number;
}

export interface DestinationsModule {
  registry: DestinationRegistry;
}

/**
 * Spec: Destination query API, Issue a destination token; the emulator's seeding `POST /_emulator/destinations`.
 * Routes: `POST /destinations/{id}/token`, `GET /{customer}/{destination}/v1/openapi`,
 * `GET|POST /{customer}/{destination}/v1/{endpoint}`.
 */
export function registerDestinationRoutes(ctx: EmulatorContext, deps: DestinationDeps): DestinationsModule {
  const registry = new DestinationRegistry();
  const tokens = new DestinationTokens(deps.nowMs ?? Date.now);

  ctx.router.add(SEED, async ({ req }) => {
    assertLoopback(req);
    const config = registry.put(parseDestinationSeed(await readJson(req, ctx.maxBodyBytes)));
    return { status: 201, body: { customer: config.customer, destination: config.destination, apiVersionId: config.apiVersionId } };
  });

  ctx.router.add(TOKEN, async ({ req, params }) => {
    const { clientId, clientSecret } = parseOrProblem(DestinationTokenRequestSchema, await readJson(req, ctx.maxBodyBytes));
    const app = deps.verifyApplication(clientId, clientSecret);
    if (!app) throw new HttpProblem(401, 'Unknown client or wrong secret.');
    // Only requests with valid credentials count, so a stranger cannot exhaust an application's budget.
    tokens.admit(clientId);
    const destination = registry.resolveTokenTarget(params.destinationId!);
    if (destination === 'ambiguous') throw new HttpProblem(400, `Several customers have a destination ${params.destinationId}; use its API version ID.`);
    if (!destination) throw new HttpProblem(404, `Destination ${params.destinationId} does not exist.`);
    if (destination.tenant !== app.tenant) throw new HttpProblem(403, 'The application does not belong to the tenant of this destination.');
    return { status: 200, body: tokens.issue(destination.apiVersionId) };
  });

  const destinationOf = (req: IncomingMessage, customer: string, name: string): DestinationConfig => {
    const destination = registry.get(customer, name);
    if (!destination) throw new HttpProblem(404, `Destination ${customer}/${name} does not exist.`);
    if (destination.protected) authorize(req, destination, tokens, deps);
    return destination;
  };
  const entriesOf = (d: DestinationConfig): ReadEntry[] => [...deps.readSourceEntries(d.tenant, d.sourceId)];

  ctx.router.add(DESCRIPTION, ({ req, params }): RouteReply => {
    const destination = destinationOf(req, params.customer!, params.destination!);
    return { status: 200, body: destinationOpenApi(destination, entriesOf(destination)), gzip: true, headers: JSON_UTF8 };
  });

  const query =
    (method: 'GET' | 'POST') =>
    async ({ req, params, query: search }: RouteRequest): Promise<RouteReply> => {
      const destination = destinationOf(req, params.customer!, params.destination!);
      const endpoint = destination.endpoints.find((e) => e.name === params.endpoint);
      if (!endpoint) throw new HttpProblem(404, `Destination ${destination.customer}/${destination.destination} has no endpoint ${params.endpoint}.`);
      const parsed = method === 'GET' ? parseGetQuery(search) : parsePostQuery(await readOptionalJson(req, ctx.maxBodyBytes));
      return { status: 200, body: runQuery(destination, endpoint, entriesOf(destination), parsed), gzip: true, headers: JSON_UTF8 };
    };
  ctx.router.add(QUERY_GET, query('GET'));
  ctx.router.add(QUERY_POST, query('POST'));

  return { registry };
}

/** Spec Authentication rule 8: a valid, unexpired bearer token on every request to a protected destination. */
function authorize(req: IncomingMessage, destination: DestinationConfig, tokens: DestinationTokens, deps: DestinationDeps): void {
  const header = req.headers.authorization ?? '';
  const match = /^Bearer\s+(\S+)$/i.exec(header);
  const challenge = { 'www-authenticate': 'Bearer' };
  if (!match) throw new HttpProblem(401, 'This destination is protected: send Authorization: Bearer <token>.', undefined, challenge);
  const token = match[1]!;
  const ok = tokens.isValid(token, destination.apiVersionId) || deps.isIssuerTokenForAudience?.(token, destination.apiVersionId) === true;
  if (!ok) throw new HttpProblem(401, 'The token is invalid, expired or not issued for this destination.', undefined, challenge);
}

/** Spec: every parameter is optional, so a POST without a body is a query without parameters. */
async function readOptionalJson(req: IncomingMessage, maxBytes: number): Promise<unknown> {
  const declared = req.headers['content-length'];
  const chunked = req.headers['transfer-encoding'] !== undefined;
  if (!chunked && (declared === undefined || declared === '0')) {
    req.resume();
    return {};
  }
  if (!req.headers['content-type']) {
    const raw = await readBody(req, maxBytes);
    if (raw.length === 0) return {};
    throw new HttpProblem(415, 'Content-Type must be application/json.');
  }
  return readJson(req, maxBytes);
}
