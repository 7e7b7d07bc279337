import type { Logger } from 'pino';
import type { TokenResponse } from '../../types.js';
import type { AuthorizationCodes } from './authorization-codes.js';
import type { Application, Credentials } from './credentials.js';
import { mintIdToken } from './id-token.js';
import type { RefreshTokens } from './refresh-tokens.js';
import type { SignInGrant } from './sign-in-grant.js';

/** What the interactive sign-in's endpoints share. */
export interface SignInDeps {
  credentials: Credentials;
  codes: AuthorizationCodes;
  refreshTokens: RefreshTokens;
  /** Sign-in events, debug level; never a code, token, verifier or state. */
  logger?: Logger;
}

/** The issuer token response plus what RFC 6749 §5.1 and OpenID Connect Core §3.1.3.3 add. */
export interface SignInTokenResponse extends TokenResponse {
  refresh_token?: string;
  id_token?: string;
}

/**
 * Mints the access token (and the ID token when `openid` is among `scopes`) of a sign-in.
 * `scopes` is the grant's, or fewer for a narrowed refresh; `refreshToken` is attached as is.
 */
export function signInTokenResponse(
  deps: SignInDeps,
  application: Application,
  grant: SignInGrant,
  scopes: readonly string[],
  refreshToken: string | undefined,
  nowMs: number,
): SignInTokenResponse {
  const tenantScopes = grant.tenantScopes.filter((scope) => scopes.includes(scope));
  const token = deps.credentials.issueUserToken(application, tenantScopes, scopes.join(' '), { subject: grant.subject, grantId: grant.id }, nowMs);
  return {
    access_token: token.accessToken,
    token_type: 'Bearer',
    expires_in: token.expiresInSeconds,
    scope: token.scope,
    ...(refreshToken !== undefined ? { refresh_token: refreshToken } : {}),
    ...(scopes.includes('openid') ? { id_token: mintIdToken(grant, scopes, token.expiresInSeconds, nowMs) } : {}),
  };
}

/** RFC 6749 §4.1.2 and §10.4: a replayed code or refresh token revokes everything of its sign-in. */
export function revokeSignIn(deps: SignInDeps, grantId: string, clientId: string, what: string): void {
  deps.credentials.revokeGrant(grantId);
  deps.refreshTokens.revokeGrant(grantId);
  // warn: a replay is a client bug or a stolen credential, worth seeing at the default level.
  deps.logger?.warn({ clientId, grantId }, `${what} replayed: the tokens of its sign-in are revoked`);
}
