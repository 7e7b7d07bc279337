import type { IncomingMessage } from 'node:http';
import { identifyPublicClient } from './client-authentication.js';
import { IssuerFailure, singleParam } from './issuer-failure.js';
import { isCodeVerifier, verifierMatches } from './pkce.js';
import { revokeSignIn, signInTokenResponse, type SignInDeps, type SignInTokenResponse } from './sign-in-tokens.js';

const invalidGrant = (description: string): IssuerFailure => new IssuerFailure(400, 'invalid_grant', description);

/**
 * `grant_type=authorization_code` (RFC 6749 §4.1.3, RFC 7636 §4.5): a public client redeems its
 * code with the PKCE verifier. invalid_request for a missing or malformed parameter, invalid_grant
 * for a code that is unknown, expired, used, another client's, bound to another redirect_uri or to
 * another verifier's challenge (RFC 6749 §5.2, RFC 7636 §4.6).
 */
export function authorizationCodeGrant(req: IncomingMessage, form: URLSearchParams, deps: SignInDeps, nowMs: number): SignInTokenResponse {
  const application = identifyPublicClient(req, form, deps.credentials);
  const code = singleParam(form, 'code', true)!;
  const redirectUri = singleParam(form, 'redirect_uri', true)!;
  const verifier = singleParam(form, 'code_verifier', true)!;
  if (!isCodeVerifier(verifier)) {
    throw new IssuerFailure(400, 'invalid_request', 'code_verifier must be 43 to 128 characters of A-Z a-z 0-9 - . _ ~.');
  }

  const found = deps.codes.lookup(code, nowMs);
  switch (found.kind) {
    case 'unknown':
      throw invalidGrant('The authorization code is not valid.');
    case 'expired':
      throw invalidGrant('The authorization code expired.');
    case 'reused':
      revokeSignIn(deps, found.grantId, application.clientId, 'authorization code');
      throw invalidGrant('The authorization code was already used; the tokens issued for it are revoked.');
    case 'valid':
      break;
  }
  const { grant, redirectUri: approvedRedirectUri, codeChallenge } = found.authorization;
  if (grant.clientId !== application.clientId) throw invalidGrant('The authorization code was issued to another client.');
  if (redirectUri !== approvedRedirectUri) throw invalidGrant('redirect_uri differs from the one of the authorization request.');
  if (!verifierMatches(verifier, codeChallenge)) throw invalidGrant('code_verifier does not match the code_challenge.');
  // Same synchronous step as the lookup: no concurrent exchange of this code can slip in between.
  deps.codes.markRedeemed(code);

  const refreshToken = grant.scopes.includes('offline') ? deps.refreshTokens.issue(grant) : undefined;
  deps.logger?.debug({ clientId: grant.clientId, grantId: grant.id }, 'authorization code redeemed');
  return signInTokenResponse(deps, application, grant, grant.scopes, refreshToken, nowMs);
}
