import type { Application } from './credentials.js';
import { IssuerFailure, scopeList } from './issuer-failure.js';

/**
 * Spec, Authentication rule 1: the interactive sign-in's own scopes. `offline` (ORY Hydra's name,
 * not OpenID Connect's `offline_access`) asks for a refresh token, `openid` for an ID token,
 * `profile` and `email` for those claims in it. They grant nothing on the tenant API.
 */
export const IDENTITY_SCOPES: ReadonlySet<string> = new Set(['openid', 'profile', 'email', 'offline']);

export interface SignInScopes {
  /** Everything granted, in request order (identity scopes included). */
  scopes: string[];
  /** The tenant API scopes among them. */
  tenantScopes: string[];
}

/**
 * Scopes of an authorization request: identity scopes plus tenant API scopes enabled for the
 * application; anything else is invalid_scope. Decision (the spec is silent): when no tenant API
 * scope is requested, the user gets every tenant API scope enabled for the application, the rule the
 * spec gives for client credentials without `scope`: the user acts within the tenant as far as the
 * application allows. An omitted `scope` is the same as one with no tenant API scope.
 */
export function resolveSignInScopes(application: Application, requested: string | undefined): SignInScopes {
  const asked = scopeList(requested);
  const refused = asked.filter((scope) => !IDENTITY_SCOPES.has(scope) && !application.scopes.has(scope));
  if (refused.length > 0) {
    throw new IssuerFailure(400, 'invalid_scope', `Scope unknown or not enabled for this application: ${refused.join(' ')}.`);
  }
  const askedTenantScopes = asked.filter((scope) => !IDENTITY_SCOPES.has(scope));
  if (askedTenantScopes.length > 0) return { scopes: asked, tenantScopes: askedTenantScopes };
  const enabled = [...application.scopes];
  return { scopes: [...asked, ...enabled], tenantScopes: enabled };
}

/**
 * RFC 6749 §6: a refresh request may narrow the scope, never widen it. Returns the narrowed scopes,
 * or the grant's own when `requested` is absent.
 */
export function narrowScopes(granted: readonly string[], requested: string | undefined): string[] {
  if (requested === undefined) return [...granted];
  const asked = scopeList(requested);
  const refused = asked.filter((scope) => !granted.includes(scope));
  if (refused.length > 0) throw new IssuerFailure(400, 'invalid_scope', `Scope not granted by the sign-in: ${refused.join(' ')}.`);
  return asked;
}
