import type { IssuerError } from '../../types.js';
import type { RouteReply } from '../http/router.js';
import type { Application } from './credentials.js';
import { IssuerFailure, singleParam } from './issuer-failure.js';
import { isRegisteredRedirectUri } from './redirect-uris.js';
import { isS256Challenge, PKCE_METHOD } from './pkce.js';
import { EMULATOR_USER, newGrantId, type SignInGrant } from './sign-in-grant.js';
import { resolveSignInScopes } from './sign-in-scopes.js';
import type { SignInDeps } from './sign-in-tokens.js';

/**
 * `GET {auth_url}/oauth2/auth` (spec, Authentication rule 1): the authorization endpoint of the
 * authorization code flow with PKCE (RFC 6749 §4.1, RFC 7636). No human is involved: a valid
 * request is approved at once for the emulator user, as if they had signed in and consented.
 *
 * RFC 6749 §4.1.2.1: without a known client and a redirect_uri registered for it (exact match,
 * auth/redirect-uris.ts) nothing may be redirected (that would make the emulator an open
 * redirector), so those answer 400 with the issuer error body. Every later error goes back to the
 * client at its redirect_uri.
 */

const NO_STORE = { 'cache-control': 'no-store', pragma: 'no-cache' } as const;

/** RFC 6749 §3.1.2: a query the redirect_uri already has is kept, the parameters are appended. */
function redirectTo(redirectUri: string, params: Record<string, string | undefined>): RouteReply {
  const added = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) if (value !== undefined) added.append(name, value);
  const separator = !redirectUri.includes('?') ? '?' : redirectUri.endsWith('?') || redirectUri.endsWith('&') ? '' : '&';
  return { status: 302, headers: { ...NO_STORE, location: `${redirectUri}${separator}${added.toString()}` } };
}

/** The client and its redirect_uri, or the failure that must not be redirected. */
function clientAndRedirect(query: URLSearchParams, deps: SignInDeps): { application: Application; redirectUri: string } {
  const clientId = singleParam(query, 'client_id', true)!;
  const application = deps.credentials.findApplication(clientId);
  if (application === undefined) throw new IssuerFailure(400, 'invalid_client', `Unknown client "${clientId}".`);
  const redirectUri = singleParam(query, 'redirect_uri', true)!;
  if (!isRegisteredRedirectUri(application.redirectUris, redirectUri)) {
    // The URI is not echoed: the answer is shown to whoever followed the link.
    throw new IssuerFailure(400, 'invalid_request', `redirect_uri is not registered for client "${clientId}".`);
  }
  return { application, redirectUri };
}

/** Checks the rest of the request and builds the grant the code will stand for. */
function approve(query: URLSearchParams, application: Application, nowMs: number): { grant: SignInGrant; codeChallenge: string } {
  const responseType = singleParam(query, 'response_type', true)!;
  if (responseType !== 'code') throw new IssuerFailure(400, 'unsupported_response_type', 'Only response_type=code is supported.');
  // RFC 7636 §4.3: an absent method means `plain`, which the emulator refuses like the method itself.
  const codeChallenge = singleParam(query, 'code_challenge', false);
  if (codeChallenge === undefined) throw new IssuerFailure(400, 'invalid_request', 'code_challenge is required: PKCE is mandatory.');
  if (singleParam(query, 'code_challenge_method', false) !== PKCE_METHOD) {
    throw new IssuerFailure(400, 'invalid_request', 'code_challenge_method must be S256.');
  }
  if (!isS256Challenge(codeChallenge)) {
    throw new IssuerFailure(400, 'invalid_request', 'code_challenge must be the 43-character BASE64URL of a SHA-256 digest.');
  }
  // Decision: the audience is required, as for client credentials, and only the application's
  // tenant is accepted (an API version ID audience is a machine-token affair).
  const audience = singleParam(query, 'audience', true)!;
  if (audience !== application.tenant) {
    throw new IssuerFailure(400, 'invalid_target', `The application is not authorized for audience "${audience}".`);
  }
  const { scopes, tenantScopes } = resolveSignInScopes(application, singleParam(query, 'scope', false));
  const nonce = singleParam(query, 'nonce', false);
  const grant: SignInGrant = {
    id: newGrantId(),
    clientId: application.clientId,
    tenant: application.tenant,
    subject: EMULATOR_USER.subject,
    scopes,
    tenantScopes,
    authTimeSeconds: Math.floor(nowMs / 1000),
    ...(nonce !== undefined ? { nonce } : {}),
  };
  return { grant, codeChallenge };
}

export function authorize(query: URLSearchParams, deps: SignInDeps, nowMs: number): RouteReply {
  let target: { application: Application; redirectUri: string };
  try {
    target = clientAndRedirect(query, deps);
  } catch (err) {
    if (!(err instanceof IssuerFailure)) throw err;
    const body: IssuerError = { error: err.error, error_description: err.description };
    return { status: err.status, body, headers: { ...NO_STORE } };
  }
  // RFC 6749 §4.1.2: state goes back unchanged, errors included. A repeated one is an error like
  // any other repeated parameter; the first value is still echoed so the client can match it.
  const state = query.get('state') || undefined;
  try {
    singleParam(query, 'state', false);
    const { grant, codeChallenge } = approve(query, target.application, nowMs);
    const code = deps.codes.issue({ grant, redirectUri: target.redirectUri, codeChallenge }, nowMs);
    deps.logger?.debug({ clientId: grant.clientId, tenant: grant.tenant, scope: grant.scopes.join(' '), grantId: grant.id }, 'interactive sign-in approved');
    return redirectTo(target.redirectUri, { code, state });
  } catch (err) {
    if (!(err instanceof IssuerFailure)) throw err;
    return redirectTo(target.redirectUri, { error: err.error, error_description: err.description, state });
  }
}
