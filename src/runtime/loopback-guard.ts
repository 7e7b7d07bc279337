import { isIPv6 } from 'node:net';
import { ConfigError } from '../errors.js';

/**
 * Host names for the guard of every local server (local-server-guard.ts). A page on another site
 * can point its own name at 127.0.0.1 ("DNS rebinding"): the browser then sends that name as
 * `Host`, and the page is same-origin with the local server. Such a request is refused because its
 * `Host` is neither a loopback literal nor a name the user allowed. Names are parsed, never
 * prefix-matched: `127.0.0.1.evil.example` is a DNS name like any other.
 *
 * Loopback names: `localhost`, an IPv4 literal in 127.0.0.0/8, `[::1]`. Allowed names
 * (`--allowed-hosts`): exact names, or `.example.com` for that name and every name below it.
 */

/** An IPv4 literal in dotted-decimal form (four parts 0..255, no leading zeros), or undefined. */
function ipv4Octets(name: string): number[] | undefined {
  const parts = name.split('.');
  if (parts.length !== 4) return undefined;
  const octets: number[] = [];
  for (const part of parts) {
    if (!/^(0|[1-9]\d{0,2})$/.test(part)) return undefined;
    const n = Number(part);
    if (n > 255) return undefined;
    octets.push(n);
  }
  return octets;
}

/** `[::1]` in any spelling a client may use (`[0:0:0:0:0:0:0:1]`), brackets required. */
function isIpv6Loopback(name: string): boolean {
  if (!name.startsWith('[') || !name.endsWith(']')) return false;
  const inner = name.slice(1, -1);
  if (!isIPv6(inner)) return false;
  try {
    return new URL(`http://${name}/`).hostname === '[::1]';
  } catch {
    return false;
  }
}

/** `localhost`, 127.0.0.0/8 or `[::1]`: names that reach this machine whatever DNS says. */
export function isLoopbackName(name: string): boolean {
  const lower = name.toLowerCase();
  if (lower === 'localhost') return true;
  const octets = ipv4Octets(lower);
  if (octets !== undefined) return octets[0] === 127;
  return isIpv6Loopback(lower);
}

/** The interface addresses a server may listen on that only this machine reaches. */
export function isLoopbackInterface(host: string): boolean {
  const bare = host.startsWith('[') ? host : isIPv6(host) ? `[${host}]` : host;
  return isLoopbackName(bare);
}

/**
 * The host name of a `Host` header (RFC 9110: uri-host [":" port]), lower-cased, IPv6 kept in
 * brackets; undefined when the header is not of that shape.
 */
export function hostNameOf(header: string): string | undefined {
  const value = header.trim().toLowerCase();
  if (value === '') return undefined;
  let name: string;
  let rest: string;
  if (value.startsWith('[')) {
    const end = value.indexOf(']');
    if (end < 0) return undefined;
    name = value.slice(0, end + 1);
    rest = value.slice(end + 1);
  } else {
    const colon = value.indexOf(':');
    name = colon < 0 ? value : value.slice(0, colon);
    rest = colon < 0 ? '' : value.slice(colon);
  }
  if (rest !== '' && !/^:\d{1,5}$/.test(rest)) return undefined;
  if (name === '' || !/^(\[[0-9a-f:.]+\]|[a-z0-9._~-]+)$/.test(name)) return undefined;
  return name;
}

const ALLOWED_HOST = /^\.?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/;

/** What `--allowed-hosts` takes, for messages that follow the option's name. */
export const ALLOWED_HOSTS_HELP = 'must be host names without scheme or port, separated by commas, e.g. emulator,.dev.example';

/**
 * `--allowed-hosts`: host names separated by commas (`emulator,.dev.example`), given as a string or
 * a list; lower-cased, duplicates dropped. `bad` is the first item that is not a bare host name.
 */
export function splitAllowedHosts(value: unknown): { names: string[] } | { bad: string } {
  if (value === undefined || value === null) return { names: [] };
  const items = Array.isArray(value) ? value : [value];
  const names: string[] = [];
  for (const item of items) {
    if (typeof item !== 'string') return { bad: JSON.stringify(item) ?? String(item) };
    for (const raw of item.split(',')) {
      const name = raw.trim().toLowerCase();
      if (name === '') continue;
      const ipv6 = name.startsWith('[') && name.endsWith(']') && isIPv6(name.slice(1, -1));
      if (!ipv6 && !ALLOWED_HOST.test(name)) return { bad: raw.trim() };
      if (!names.includes(name)) names.push(name);
    }
  }
  return { names };
}

/** {@link splitAllowedHosts}, throwing a ConfigError naming `option` for a bad item. */
export function parseAllowedHosts(value: unknown, option = '--allowed-hosts'): string[] {
  const result = splitAllowedHosts(value);
  if ('bad' in result) throw new ConfigError(`${option} ${ALLOWED_HOSTS_HELP} (got ${result.bad.slice(0, 80)})`, option);
  return result.names;
}
