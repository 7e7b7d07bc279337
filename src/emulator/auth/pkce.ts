import { createHash, timingSafeEqual } from 'node:crypto';

/** RFC 7636 §4.1: 43..128 characters of the unreserved set. */
const CODE_VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/;
/** RFC 7636 §4.2: BASE64URL (no padding) of a SHA-256 digest is always 43 characters. */
export const S256_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

/** The only method accepted: `plain` would send the secret itself through the browser (RFC 7636 §7.2). */
export const PKCE_METHOD = 'S256';

export function isCodeVerifier(value: string): boolean {
  return CODE_VERIFIER.test(value);
}

/** Catches clients that send hex, padded base64 or the verifier itself as the challenge. */
export function isS256Challenge(value: string): boolean {
  return S256_CHALLENGE.test(value);
}

/** RFC 7636 §4.6: BASE64URL(SHA256(ASCII(code_verifier))) == code_challenge, compared in constant time. */
export function verifierMatches(verifier: string, challenge: string): boolean {
  const computed = Buffer.from(createHash('sha256').update(verifier, 'ascii').digest('base64url'));
  const expected = Buffer.from(challenge);
  return computed.length === expected.length && timingSafeEqual(computed, expected);
}
