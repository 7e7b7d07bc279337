/**
 * Hides the password (and a bare token in the username slot) of a URL before it is logged or put in
 * an error: idempotency URLs such as `redis://:s3cret@host:6379` or `postgres://app:s3cret@db/app`,
 * and query parameters that look like credentials. Values that are not URLs (`memory`) come back
 * unchanged.
 */
export function redactUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    // Not parseable, yet it may still carry `user:password@` (a typo in the host, a missing port).
    return value.replace(/\/\/([^/@:]*):[^/@]*@/, '//$1:***@').replace(/\/\/[^/@:]+@/, '//***@');
  }
  let changed = false;
  if (url.password !== '') {
    url.password = '***';
    changed = true;
  } else if (url.username !== '') {
    // `redis://s3cret@host` puts a bare password in the username slot (node-redis accepts it).
    url.username = '***';
    changed = true;
  }
  for (const name of [...url.searchParams.keys()]) {
    if (/pass|secret|token|key/i.test(name)) {
      url.searchParams.set(name, '***');
      changed = true;
    }
  }
  if (!changed) return value;
  const text = url.toString();
  // WHATWG adds a "/" path to http(s) URLs; keep the user's spelling otherwise.
  return text.endsWith('/') && !value.endsWith('/') ? text.slice(0, -1) : text;
}
