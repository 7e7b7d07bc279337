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

/** An absolute http(s) URL without a fragment (RFC 6749 §3.1.2), or the reason it is not one. */
export function redirectUriProblem(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'must be an absolute http or https URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'must be an absolute http or https URL';
  if (value.includes('#')) return 'must not have a fragment';
  return undefined;
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
