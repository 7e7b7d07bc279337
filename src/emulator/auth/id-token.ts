import { TOKEN_ISSUER, unsecuredJwt } from './jwt.js';
import { EMULATOR_USER, type SignInGrant } from './sign-in-grant.js';

/**
 * The OpenID Connect ID token of a sign-in (when `openid` was granted): who signed in, for the
 * client (`aud` = client id). Unsigned and emulator-only (see `unsecuredJwt`); `profile` and
 * `email` add the standard claims of OpenID Connect Core §5.4.
 */
export function mintIdToken(grant: SignInGrant, scopes: readonly string[], lifetimeSeconds: number, nowMs: number): string {
  const issuedAtSeconds = Math.floor(nowMs / 1000);
  return unsecuredJwt({
    iss: TOKEN_ISSUER,
    sub: grant.subject,
    aud: grant.clientId,
    iat: issuedAtSeconds,
    exp: issuedAtSeconds + lifetimeSeconds,
    auth_time: grant.authTimeSeconds,
    ...(grant.nonce !== undefined ? { nonce: grant.nonce } : {}),
    ...(scopes.includes('profile') ? { name: EMULATOR_USER.name, preferred_username: EMULATOR_USER.preferredUsername } : {}),
    ...(scopes.includes('email') ? { email: EMULATOR_USER.email, email_verified: true } : {}),
  });
}
