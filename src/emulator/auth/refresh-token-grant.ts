import type { IncomingMessage } from 'node:http';
import { identifyPublicClient } from './client-authentication.js';
import { IssuerFailure, singleParam } from './issuer-failure.js';
import { narrowScopes } from './sign-in-scopes.js';
import { revokeSignIn, signInTokenResponse, type SignInDeps, type SignInTokenResponse } from './sign-in-tokens.js';

/**
 * `grant_type=refresh_token` (RFC 6749 §6): a new access token and a rotated refresh token; the
 * presented one stops working. A replay of a rotated token revokes the whole sign-in, as ORY Hydra
 * does. `scope` may narrow the new access token (never widen it); the refresh token keeps the
 * sign-in's full grant.
 */
export function refreshTokenGrant(req: IncomingMessage, form: URLSearchParams, deps: SignInDeps, nowMs: number): SignInTokenResponse {
  const application = identifyPublicClient(req, form, deps.credentials);
  const presented = singleParam(form, 'refresh_token', true)!;
  const requestedScope = singleParam(form, 'scope', false);

  const found = deps.refreshTokens.lookup(presented, application.clientId);
  switch (found.kind) {
    case 'unknown':
      throw new IssuerFailure(400, 'invalid_grant', 'The refresh token is not valid.');
    case 'wrong-client':
      throw new IssuerFailure(400, 'invalid_grant', 'The refresh token was issued to another client.');
    case 'reused':
      revokeSignIn(deps, found.grantId, application.clientId, 'refresh token');
      throw new IssuerFailure(400, 'invalid_grant', 'The refresh token was already used; the tokens of its sign-in are revoked.');
    case 'active':
      break;
  }
  // Checked before rotating: a refused request does not cost the client its refresh token.
  const scopes = narrowScopes(found.grant.scopes, requestedScope);
  const refreshToken = deps.refreshTokens.rotate(presented);
  deps.logger?.debug({ clientId: application.clientId, grantId: found.grant.id }, 'refresh token rotated');
  return signInTokenResponse(deps, application, found.grant, scopes, refreshToken, nowMs);
}
