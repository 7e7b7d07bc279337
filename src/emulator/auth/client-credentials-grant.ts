import type { IncomingMessage } from 'node:http';
import type { TokenResponse } from '../../types.js';
import { authenticateConfidentialClient } from './client-authentication.js';
import type { Application, Credentials } from './credentials.js';
import { IssuerFailure, scopeList, singleParam } from './issuer-failure.js';

/** The tenant of the destination whose API version ID is `audience`, if any (a late-bound lookup). */
export type ApiVersionTenant = (audience: string) => string | undefined;

function grantedScopes(application: Application, requested: string | undefined): string[] {
  // Spec: "Omitting scope with the tenant audience requests every tenant API scope enabled for the application."
  const scopes = scopeList(requested);
  if (scopes.length === 0) return [...application.scopes];
  const refused = scopes.filter((scope) => !application.scopes.has(scope));
  if (refused.length > 0) {
    throw new IssuerFailure(400, 'invalid_scope', `Scope not enabled for this application: ${refused.join(' ')}.`);
  }
  return scopes;
}

/**
 * `grant_type=client_credentials` (spec: "Issue a machine access token"):
 *   invalid_client 401  unknown client or wrong secret (one answer for both: no id probing)
 *   invalid_target 400  audience is neither the application's tenant nor the API version ID of a
 *                       destination of that tenant
 *   invalid_scope 400   a scope unknown or not enabled for the application
 */
export function clientCredentialsGrant(
  req: IncomingMessage,
  form: URLSearchParams,
  credentials: Credentials,
  apiVersionTenant: ApiVersionTenant,
): TokenResponse {
  const application = authenticateConfidentialClient(req, form, credentials);
  const audience = singleParam(form, 'audience', true)!;
  const requestedScope = singleParam(form, 'scope', false);
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
