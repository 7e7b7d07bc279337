import type { IncomingMessage } from 'node:http';
import type { Logger } from 'pino';
import * as z from 'zod';
import type { IssuerError, TokenResponse } from '../../types.js';
import { isFormRequest, readForm } from '../http/body.js';
import { HttpProblem } from '../http/problem.js';
import type { RouteReply, Router } from '../http/router.js';
import type { OperationSpec } from '../openapi/operation.js';
import { answer } from '../openapi/responses.js';
import { authorizationCodeGrant } from './authorization-code-grant.js';
import { AuthorizationCodes } from './authorization-codes.js';
import { authorize } from './authorize-endpoint.js';
import { clientCredentialsGrant, type ApiVersionTenant } from './client-credentials-grant.js';
import type { Credentials } from './credentials.js';
import { IssuerFailure, singleParam } from './issuer-failure.js';
import { refreshTokenGrant } from './refresh-token-grant.js';
import { RefreshTokens } from './refresh-tokens.js';
import { AUTHORIZE_QUERY, IssuerErrorSchema, TokenRequestSchema, TokenResponseSchema } from './schemas.js';
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

const issuerError = (description: string) => answer(description, IssuerErrorSchema);
const noStore = { 'Cache-Control': { description: '`no-store` (RFC 6749 §5.1).', schema: z.literal('no-store'), required: true } };

const TOKEN: OperationSpec = {
  method: 'POST',
  path: '/oauth2/token',
  operationId: 'issueToken',
  summary: 'Issue an access token: client credentials, or the authorization code and refresh token grants of the interactive sign-in.',
  description: 'At `{auth_url}` in the platform. Errors use the issuer shape `{error, error_description}`, not problem details.',
  tag: 'Issuer',
  security: { kind: 'none' },
  requestBody: {
    schema: TokenRequestSchema,
    mediaType: 'application/x-www-form-urlencoded',
    example: { grant_type: 'client_credentials', client_id: 'dev-client', client_secret: 'dev-secret', audience: 'dev-tenant', scope: 'read:events' },
  },
  responses: {
    '200': {
      ...answer('The token.', TokenResponseSchema, { access_token: 'eyJhbGciOi...', token_type: 'Bearer', expires_in: 3600, scope: 'read:events' }),
      headers: noStore,
    },
    '400': issuerError('`invalid_request`, `unsupported_grant_type`, `invalid_grant`, `invalid_scope` or `invalid_target`.'),
    '401': issuerError('`invalid_client`: unknown client or wrong secret (`WWW-Authenticate: Basic`).'),
    '413': issuerError('`invalid_request`: the form is larger than the emulator accepts.'),
  },
};

const AUTHORIZE: OperationSpec = {
  method: 'GET',
  path: '/oauth2/auth',
  operationId: 'authorize',
  summary: 'Authorization endpoint of the interactive sign-in (authorization code with PKCE S256).',
  description: 'At `{auth_url}` in the platform. The emulator approves every valid request at once for one fixed user (no login or consent page).',
  tag: 'Issuer',
  security: { kind: 'none' },
  query: AUTHORIZE_QUERY,
  responses: {
    '302': {
      description: 'Back to `redirect_uri` with `code` and `state`, or with `error`, `error_description` and `state`.',
      headers: { Location: { description: 'The redirect_uri with the answer in its query.', schema: z.string(), required: true } },
    },
    '400': issuerError('Unknown client, or a `redirect_uri` missing or not registered for the client: never redirected.'),
  },
};

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

  router.add(AUTHORIZE, ({ query }): RouteReply => authorize(query, signIn, Date.now()));

  router.add(TOKEN, async ({ req }): Promise<RouteReply> => {
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
