import { randomUUID } from 'node:crypto';

/**
 * The one user the emulator signs in as. There is no login or consent page: every valid
 * authorization request is approved at once for this user (`sub` of its tokens). The e-mail
 * address is in a domain reserved for examples (RFC 2606), so it can never reach anyone.
 */
export const EMULATOR_USER = Object.freeze({
  subject: 'emulator-user',
  name: 'Emulator User',
  preferredUsername: 'emulator-user',
  email: 'emulator-user@example.com',
});

/**
 * One approved interactive sign-in: what was granted to which client. Its authorization code, its
 * refresh tokens and every access token minted from it share `id`, so the whole family can be
 * revoked when a code or a refresh token is replayed.
 */
export interface SignInGrant {
  id: string;
  clientId: string;
  /** The application's tenant (spec: tenant identity comes only from the credential). */
  tenant: string;
  subject: string;
  /** Everything granted, identity scopes included: the `scope` of the token responses. */
  scopes: readonly string[];
  /** The tenant API scopes the access tokens hold. */
  tenantScopes: readonly string[];
  /** When the user "authenticated" (the approval), epoch seconds: the ID token's `auth_time`. */
  authTimeSeconds: number;
  /** OpenID Connect `nonce` of the authorization request, echoed in ID tokens. */
  nonce?: string;
}

export function newGrantId(): string {
  return randomUUID();
}
