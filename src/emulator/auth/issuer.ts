import type { IncomingMessage } from 'node:http';
import type { Logger } from 'pino';
import type { IssuerError, TokenResponse } from '../../types.js';
import { isFormRequest, readForm } from '../http/body.js';
import { HttpProblem } from '../http/problem.js';
import type { RouteReply, Router } from '../http/router.js';
import { authorizationCodeGrant } from './authorization-code-grant.js';
import { AuthorizationCodes } from './authorization-codes.js';
import { authorize } from './authorize-endpoint.js';
import { clientCredentialsGrant, type ApiVersionTenant } from './client-credentials-grant.js';
import type { Credentials } from './credentials.js';
import { IssuerFailure, singleParam } from './issuer-failure.js';
import { refreshTokenGrant } from './refresh-token-grant.js';
import { RefreshTokens } from './refresh-tokens.js';
import type { SignInDeps } from './sign-in-tokens.js';

export type { ApiVersionTenant } from './client-credentials-grant.js';

/**
 * The token issuer at `{auth_url}` (the emulator's own origin):
 *   POST /oauth2/token  client_credentials (spec: "Issue a machine access token"), and the
 *                       authorization_code and refresh_token grants of the interactive sign-in
 *   GET  /oauth2/auth   authorization endpoint of the interactive sign-in (spec, Authentication rule 1)
 * Error bodies use the issuer shape `{error, error_description}`; token endpoint codes shared by
 * every grant (RFC 6749 §5.2):
 *   invalid_request 400        missing/repeated parameter, wrong content type, oversized body
 *   unsupported_grant_type 400 a grant_type other than the three above
 *   invalid_client 401         unknown client or wrong secret (one answer for both: no id probing)
 * The codes of each grant are described in its module.
 */

export interface IssuerOptions {
  /** Where sign-in events are logged (debug; replays at warn), never with a secret. Default: not logged. */
  logger?: Logger;
}

const SUPPORTED_GRANTS = ['client_credentials', 'authorization_code', 'refresh_token'] as const;

async function readTokenForm(req: IncomingMessage, maxBodyBytes: number): Promise<URLSearchParams> {
  if (!isFormRequest(req)) {
    req.resume();
    throw new IssuerFailure(400, 'invalid_request', 'Content-Type must be application/x-www-form-urlencoded.');
  }
  try {
    return await readForm(req, maxBodyBytes);
  } catch (err) {
    if (err instanceof HttpProblem) throw new IssuerFailure(err.status, 'invalid_request', err.detail);
    throw err;
  }
}

async function issue(req: IncomingMessage, maxBodyBytes: number, signIn: SignInDeps, apiVersionTenant: ApiVersionTenant): Promise<TokenResponse> {
  const form = await readTokenForm(req, maxBodyBytes);
  const grantType = singleParam(form, 'grant_type', true)!;
  switch (grantType) {
    case 'client_credentials':
      return clientCredentialsGrant(req, form, signIn.credentials, apiVersionTenant);
    case 'authorization_code':
      return authorizationCodeGrant(req, form, signIn, Date.now());
    case 'refresh_token':
      return refreshTokenGrant(req, form, signIn, Date.now());
    default:
      throw new IssuerFailure(400, 'unsupported_grant_type', `Supported grant types: ${SUPPORTED_GRANTS.join(', ')}.`);
  }
}

export function registerIssuerRoutes(
  router: Router,
  credentials: Credentials,
  maxBodyBytes: number,
  apiVersionTenant: ApiVersionTenant = () => undefined,
  options: IssuerOptions = {},
): void {
  const signIn: SignInDeps = {
    credentials,
    codes: new AuthorizationCodes(),
    refreshTokens: new RefreshTokens(),
    ...(options.logger !== undefined ? { logger: options.logger } : {}),
  };

  router.add('GET', '/oauth2/auth', ({ query }): RouteReply => authorize(query, signIn, Date.now()));

  router.add('POST', '/oauth2/token', async ({ req }): Promise<RouteReply> => {
    // RFC 6749 §5.1: token responses must not be cached.
    const headers = { 'cache-control': 'no-store', pragma: 'no-cache' };
    try {
      return { status: 200, body: await issue(req, maxBodyBytes, signIn, apiVersionTenant), headers };
    } catch (err) {
      if (!(err instanceof IssuerFailure)) throw err;
      const body: IssuerError = { error: err.error, error_description: err.description };
      const replyHeaders: Record<string, string> = { ...headers };
      if (err.status === 401) replyHeaders['www-authenticate'] = 'Basic realm="emulator"';
      return { status: err.status, body, headers: replyHeaders };
    }
  });
}
