/**
 * Registered redirect URIs of the interactive sign-in. OAuth 2.1 §2.3.1 (and RFC 6749 §10.6, §10.15):
 * the authorization server compares the request's `redirect_uri` with the client's registered ones
 * by exact string match, so it never sends a code (or an error) to a place the client did not name
 * in advance: without that it is an open redirector.
 *
 * The one exception is OAuth 2.1's and RFC 8252 §7.3's: for an `http` URI on a loopback IP literal
 * (`127.0.0.1`, `[::1]`) any port matches, as a native app listens on a port it gets at run time;
 * everything else (scheme, host, path, query) still matches exactly.
 */

/**
 * What a registered redirect URI may be, one rule for the config, the seeding endpoint and the
 * published description (RFC 6749 §3.1.2: absolute, no fragment): `http` or `https`, a host (name,
 * IPv4 or bracketed IPv6, optional port) without user info, then an optional path and query of
 * printable ASCII without spaces (what a `Location` header carries as is).
 */
export const REDIRECT_URI_PATTERN = /^https?:\/\/[A-Za-z0-9.\-\[\]:]+(?:[/?][!"$-~]*)?$/;

/** Why `value` cannot be registered as a redirect URI, or undefined. */
export function redirectUriProblem(value: string): string | undefined {
  return REDIRECT_URI_PATTERN.test(value) ? undefined : 'must be an absolute http or https URL without user info, spaces or fragment';
}

const LOOPBACK_IP = new Set(['127.0.0.1', '[::1]']);

/** `value` with the port taken out, when it is an http URI on a loopback IP literal; else undefined. */
function withoutLoopbackPort(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'http:' || !LOOPBACK_IP.has(url.hostname)) return undefined;
  // The authority is rewritten in the caller's own spelling: only `:port` is dropped, so the rest
  // of the string (path and query as sent) is still compared character for character.
  const authority = `//${url.hostname}${url.port === '' ? '' : `:${url.port}`}`;
  const at = value.toLowerCase().indexOf(authority);
  return at < 0 ? undefined : `${value.slice(0, at)}//${url.hostname}${value.slice(at + authority.length)}`;
}

/** Whether `given` is one of `registered` (exact match; any port for a loopback IP literal over http). */
export function isRegisteredRedirectUri(registered: readonly string[], given: string): boolean {
  if (registered.includes(given)) return true;
  const bare = withoutLoopbackPort(given);
  return bare !== undefined && registered.some((uri) => withoutLoopbackPort(uri) === bare);
}
