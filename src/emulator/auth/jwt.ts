import { randomBytes } from 'node:crypto';

/** `iss` of every token the emulator mints (access tokens and ID tokens alike). */
export const TOKEN_ISSUER = 'durable-worker-emulator';

function segment(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

/**
 * A JWT-shaped bearer token: header `alg: none` and a random third segment in place of a signature.
 * The random segment makes the token unguessable; the server trusts only its own table of issued
 * tokens, so decoding or forging one grants nothing. Tools can still decode `aud`, `scope`, `exp`.
 */
export function bearerJwt(claims: Readonly<Record<string, unknown>>): string {
  return `${segment({ alg: 'none', typ: 'JWT' })}.${segment(claims)}.${randomBytes(32).toString('base64url')}`;
}

/**
 * An Unsecured JWT (RFC 7519 §6.1: `alg: none`, empty signature), so JWT libraries decode it as one.
 * Emulator only: OpenID Connect Core §2 allows an unsigned ID token only for the code flow, where it
 * comes straight from the token endpoint over the client's own connection; no real issuer of the
 * platform would hand one out.
 */
export function unsecuredJwt(claims: Readonly<Record<string, unknown>>): string {
  return `${segment({ alg: 'none', typ: 'JWT' })}.${segment(claims)}.`;
}
