import type { IncomingMessage, ServerResponse } from 'node:http';
import { ConfigError } from '../errors.js';
import { hostNameOf, isLoopbackName } from './loopback-guard.js';

/**
 * The one guard of every local server (the emulator, `dev`'s console, the metrics server), run on
 * a request before anything else reads it:
 *
 * 1. One `Host` (RFC 9112 §3.2: a request with more than one is answered 400).
 * 2. The authority the request is for must be a loopback name or an allowed one (403 otherwise):
 *    the `Host` header and, for an absolute-form target (`GET http://name/path`), the target's
 *    authority too, which RFC 9112 §3.2.2 makes the one that counts. A page on another site that
 *    points its own name at 127.0.0.1 ("DNS rebinding") is refused here. An accepted absolute-form
 *    target is rewritten to origin-form in `req.url`, so routing sees the path only.
 * 3. A state change (any method but GET, HEAD, OPTIONS) from a browser must come from the server's
 *    own origin (`http://` + the authority above) or an allowed origin (`--allowed-origins`): its
 *    `Origin`, or without one its `Sec-Fetch-Site` (`same-origin`, or `none` for a request the user
 *    typed). A request with neither is not from a page (curl, a worker, an SDK) and is accepted.
 *    Another local server's page (another port, scheme or loopback name) is another origin.
 * 4. `X-Content-Type-Options: nosniff` on every answer, refusals included: no answer is ever
 *    sniffed into a script or a page.
 */

export interface LocalServerGuardOptions {
  /** Names besides the loopback ones (`--allowed-hosts`, parsed by loopback-guard.ts). */
  allowedHosts?: readonly string[];
  /** Origins whose pages may change state (`--allowed-origins`, {@link parseAllowedOrigins}). */
  allowedOrigins?: readonly string[];
  /**
   * `'any'`: every name is answered (the metrics server on 0.0.0.0 in a pod, addressed by its IP);
   * the other rules still hold. Default: loopback and allowed names only.
   */
  hosts?: 'any';
}

export interface GuardRefusal {
  status: 400 | 403;
  message: string;
}

export interface LocalServerGuard {
  /** Checks `req` (see above) and sets `nosniff` on `res`; a refusal to answer, or undefined. */
  admit(req: IncomingMessage, res: ServerResponse): GuardRefusal | undefined;
  /** Whether a host name (without port, IPv6 in brackets) is answered. */
  acceptsHostName(name: string): boolean;
}

const SAFE_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS']);
/** `Sec-Fetch-Site` values of requests that no other site's page made. */
const OWN_FETCH_SITES: ReadonlySet<string> = new Set(['same-origin', 'none']);

/** What `--allowed-origins` takes, for messages that follow the option's name. */
export const ALLOWED_ORIGINS_HELP = 'must be origins (scheme, host and optional port, no path), separated by commas, e.g. http://localhost:5173';

/** `--allowed-origins`: a string or list of origins, comma-separated; each kept in URL's serialisation. */
export function parseAllowedOrigins(value: unknown, option = '--allowed-origins'): string[] {
  if (value === undefined || value === null) return [];
  const origins: string[] = [];
  for (const item of Array.isArray(value) ? value : [value]) {
    for (const raw of typeof item === 'string' ? item.split(',') : [item]) {
      const text = typeof raw === 'string' ? raw.trim() : raw;
      if (text === '') continue;
      const origin = typeof text === 'string' ? originOf(text) : undefined;
      // Nothing but scheme, host and port: `new URL` adds only the `/` path to an origin.
      if (origin === undefined || new URL(text as string).href !== `${origin}/`) {
        throw new ConfigError(`${option} ${ALLOWED_ORIGINS_HELP} (got ${String(JSON.stringify(text)).slice(0, 80)})`, option);
      }
      if (!origins.includes(origin)) origins.push(origin);
    }
  }
  return origins;
}

/** The serialised origin of an http(s) URL (`http://localhost:8787`), or undefined (`null`, another scheme, malformed). */
function originOf(value: string): string | undefined {
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.origin : undefined;
  } catch {
    return undefined;
  }
}

function countHostHeaders(raw: readonly string[]): number {
  let count = 0;
  for (let i = 0; i < raw.length; i += 2) if (raw[i]!.toLowerCase() === 'host') count += 1;
  return count;
}

const quoted = (value: string | undefined): string => JSON.stringify((value ?? '').slice(0, 100));

export function createLocalServerGuard(options: LocalServerGuardOptions = {}): LocalServerGuard {
  const allowedHosts = options.allowedHosts ?? [];
  const exact = new Set(allowedHosts.filter((name) => !name.startsWith('.')));
  const suffixes = allowedHosts.filter((name) => name.startsWith('.'));
  const allowedOrigins = new Set(options.allowedOrigins ?? []);
  const anyHost = options.hosts === 'any';
  const acceptsHostName = (name: string): boolean =>
    anyHost || isLoopbackName(name) || exact.has(name) || suffixes.some((suffix) => name.endsWith(suffix) || name === suffix.slice(1));
  const hint = allowedHosts.length === 0 ? ' (--allowed-hosts to allow another name)' : '';
  const forbidden = (message: string): GuardRefusal => ({ status: 403, message });
  const notAnswered = (what: string, value: string | undefined): GuardRefusal =>
    forbidden(`this local server answers requests for localhost, 127.0.0.1 or [::1] only${hint} (${what}: ${quoted(value)})`);

  /** The authority the request is for, or the refusal; rewrites an absolute-form target to origin-form. */
  function authorityOf(req: IncomingMessage): string | GuardRefusal {
    const host = req.headers.host;
    const hostName = host === undefined ? undefined : hostNameOf(host);
    if (hostName === undefined || !acceptsHostName(hostName)) return notAnswered('Host', host);
    const target = req.url ?? '/';
    if (target.startsWith('/') || target === '*') return host!.trim().toLowerCase();
    // Read as sent, not through URL (which turns `127.1` into `127.0.0.1`): the same parse as Host.
    const parts = /^https?:\/\/([^/?#]*)([^#]*)$/i.exec(target);
    if (parts === null) return { status: 400, message: `the request target must be a path or an absolute http URL (got ${quoted(target)})` };
    const [, authority = '', rest = ''] = parts;
    const targetName = hostNameOf(authority);
    if (targetName === undefined || !acceptsHostName(targetName)) return notAnswered('request target', target);
    req.url = rest.startsWith('/') ? rest : `/${rest}`;
    return authority.toLowerCase();
  }

  return {
    acceptsHostName,
    admit(req, res) {
      res.setHeader('x-content-type-options', 'nosniff');
      if (countHostHeaders(req.rawHeaders) > 1) return { status: 400, message: 'a request carries one Host header (RFC 9112 section 3.2)' };
      const authority = authorityOf(req);
      if (typeof authority !== 'string') return authority;
      if (SAFE_METHODS.has((req.method ?? 'GET').toUpperCase())) return undefined;
      const origin = req.headers.origin;
      if (origin !== undefined) {
        const from = originOf(origin);
        if (from !== undefined && (from === originOf(`http://${authority}`) || allowedOrigins.has(from))) return undefined;
        return forbidden(`changes are accepted from this server's own pages and the --allowed-origins only (Origin: ${quoted(origin)})`);
      }
      const site = req.headers['sec-fetch-site'];
      if (typeof site === 'string' && !OWN_FETCH_SITES.has(site.toLowerCase())) {
        return forbidden(`changes are accepted from this server's own pages and the --allowed-origins only (Sec-Fetch-Site: ${quoted(site)})`);
      }
      return undefined;
    },
  };
}
