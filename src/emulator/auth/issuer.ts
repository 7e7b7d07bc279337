import type { IncomingMessage } from 'node:http';
import type { IssuerError, TokenResponse } from '../../types.js';
import { isFormRequest, readForm } from '../http/body.js';
import { HttpProblem } from '../http/problem.js';
import type { RouteReply, Router } from '../http/router.js';
import type { Application, Credentials } from './credentials.js';

/**
 * `POST /oauth2/token`, client credentials (spec: "Issue a machine access token"). Error bodies use
 * the issuer shape `{error, error_description}`; the spec shows no codes, so we use RFC 6749 §5.2
 * and RFC 8707:
 *   invalid_request 400        missing/repeated parameter, wrong content type, oversized body
 *   unsupported_grant_type 400 grant_type other than client_credentials
 *   invalid_client 401         unknown client or wrong secret (one answer for both: no id probing)
 *   invalid_target 400         audience is neither the application's tenant nor the API version ID
 *                              of a destination of that tenant
 *   invalid_scope 400          a scope unknown or not enabled for the application
 */

class IssuerFailure extends Error {
  constructor(
    readonly status: number,
    readonly error: string,
    readonly description: string,
  ) {
    super(description);
  }
}

function single(form: URLSearchParams, name: string, required: boolean): string | undefined {
  const values = form.getAll(name);
  if (values.length > 1) throw new IssuerFailure(400, 'invalid_request', `${name} must not be repeated.`);
  const value = values[0];
  if ((value === undefined || value === '') && required) throw new IssuerFailure(400, 'invalid_request', `${name} is required.`);
  return value === '' ? undefined : value;
}

/** RFC 6749 §2.3.1: client credentials may come in HTTP Basic instead of the form. */
function basicCredentials(req: IncomingMessage): { clientId: string; clientSecret: string } | undefined {
  const header = req.headers.authorization;
  if (header === undefined) return undefined;
  const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
  if (match === null) throw new IssuerFailure(400, 'invalid_request', 'Only Basic client authentication is accepted in the Authorization header.');
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) throw new IssuerFailure(400, 'invalid_request', 'Malformed Basic credentials.');
  return { clientId: formDecode(decoded.slice(0, colon)), clientSecret: formDecode(decoded.slice(colon + 1)) };
}

function formDecode(value: string): string {
  try {
    return decodeURIComponent(value.replace(/\+/g, ' '));
  } catch {
    throw new IssuerFailure(400, 'invalid_request', 'Malformed Basic credentials.');
  }
}

function grantedScopes(application: Application, requested: string | undefined): string[] {
  // Spec: "Omitting scope with the tenant audience requests every tenant API scope enabled for the application."
  if (requested === undefined || requested.trim() === '') return [...application.scopes];
  const scopes = [...new Set(requested.trim().split(/ +/))];
  const refused = scopes.filter((scope) => !application.scopes.has(scope));
  if (refused.length > 0) {
    throw new IssuerFailure(400, 'invalid_scope', `Scope not enabled for this application: ${refused.join(' ')}.`);
  }
  return scopes;
}

/** The tenant of the destination whose API version ID is `audience`, if any (a late-bound lookup). */
export type ApiVersionTenant = (audience: string) => string | undefined;

async function issue(req: IncomingMessage, credentials: Credentials, maxBodyBytes: number, apiVersionTenant: ApiVersionTenant): Promise<TokenResponse> {
  if (!isFormRequest(req)) {
    req.resume();
    throw new IssuerFailure(400, 'invalid_request', 'Content-Type must be application/x-www-form-urlencoded.');
  }
  let form: URLSearchParams;
  try {
    form = await readForm(req, maxBodyBytes);
  } catch (err) {
    if (err instanceof HttpProblem) throw new IssuerFailure(err.status, 'invalid_request', err.detail);
    throw err;
  }
  const grantType = single(form, 'grant_type', true)!;
  if (grantType !== 'client_credentials') {
    throw new IssuerFailure(400, 'unsupported_grant_type', 'Only grant_type=client_credentials is supported.');
  }
  const basic = basicCredentials(req);
  const formId = single(form, 'client_id', basic === undefined);
  const formSecret = single(form, 'client_secret', basic === undefined);
  if (basic !== undefined && formSecret !== undefined) {
    throw new IssuerFailure(400, 'invalid_request', 'Use one client authentication method, not both.');
  }
  const clientId = basic?.clientId ?? formId!;
  const clientSecret = basic?.clientSecret ?? formSecret!;
  const application = credentials.verifyClient(clientId, clientSecret);
  if (application === undefined) throw new IssuerFailure(401, 'invalid_client', 'Client authentication failed.');

  const audience = single(form, 'audience', true)!;
  const requestedScope = single(form, 'scope', false);
  if (audience !== application.tenant) {
    if (apiVersionTenant(audience) !== application.tenant) {
      throw new IssuerFailure(400, 'invalid_target', `The application is not authorized for audience "${audience}".`);
    }
    // Spec: the scope is left empty for an API version audience; a sent one is ignored, not refused.
    const token = credentials.issueApiVersionToken(application, audience);
    return { access_token: token.accessToken, token_type: 'Bearer', expires_in: token.expiresInSeconds, scope: token.scope };
  }
  const scopes = grantedScopes(application, requestedScope);
  const token = credentials.issueToken(application, scopes);
  return { access_token: token.accessToken, token_type: 'Bearer', expires_in: token.expiresInSeconds, scope: token.scope };
}

export function registerIssuerRoutes(router: Router, credentials: Credentials, maxBodyBytes: number, apiVersionTenant: ApiVersionTenant = () => undefined): void {
  router.add('POST', '/oauth2/token', async ({ req }): Promise<RouteReply> => {
    // RFC 6749 §5.1: token responses must not be cached.
    const headers = { 'cache-control': 'no-store', pragma: 'no-cache' };
    try {
      return { status: 200, body: await issue(req, credentials, maxBodyBytes, apiVersionTenant), headers };
    } catch (err) {
      if (!(err instanceof IssuerFailure)) throw err;
      const body: IssuerError = { error: err.error, error_description: err.description };
      const replyHeaders: Record<string, string> = { ...headers };
      if (err.status === 401) replyHeaders['www-authenticate'] = 'Basic realm="emulator"';
      return { status: err.status, body, headers: replyHeaders };
    }
  });
}
