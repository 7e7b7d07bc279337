import { ConfigError } from '../errors.js';

/** An absolute http(s) URL without userinfo, normalised; ConfigError naming the option otherwise. */
export function checkUrl(name: string, value: unknown): string {
  let url: URL;
  try {
    url = new URL(String(value));
  } catch {
    throw new ConfigError(`${name} must be an absolute http(s) URL (got ${JSON.stringify(value)})`, name);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ConfigError(`${name} must use http or https (got ${url.protocol})`, name);
  }
  if (url.username || url.password) throw new ConfigError(`${name} must not carry credentials`, name);
  return url.toString();
}
