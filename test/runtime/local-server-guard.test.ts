import type { IncomingMessage, ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { LOOPBACK_HOSTS, REBINDING_HOSTS } from '../fixtures/host-names.js';
import { createLocalServerGuard, parseAllowedOrigins, type LocalServerGuard } from '../../src/runtime/local-server-guard.js';
import { hostNameOf, isLoopbackInterface, isLoopbackName, parseAllowedHosts } from '../../src/runtime/loopback-guard.js';

/**
 * The guard's rules one by one, on the parts of a request it reads (method, target, headers as the
 * parser gives them). The servers that use it are tested over real HTTP in test/cli/host-guard.test.ts.
 */
interface Checked {
  refusal: ReturnType<LocalServerGuard['admit']>;
  url: string;
  nosniff: boolean;
}

function check(guard: LocalServerGuard, method: string, headers: Record<string, string | string[]>, url = '/x'): Checked {
  const rawHeaders = Object.entries(headers).flatMap(([name, value]) => (Array.isArray(value) ? value.flatMap((v) => [name, v]) : [name, value]));
  const single = Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), Array.isArray(value) ? value[0] : value]));
  const req = { method, url, headers: single, rawHeaders } as unknown as IncomingMessage;
  const set: Record<string, string> = {};
  const res = { setHeader: (name: string, value: string) => (set[name.toLowerCase()] = value) } as unknown as ServerResponse;
  const refusal = guard.admit(req, res);
  return { refusal, url: req.url!, nosniff: set['x-content-type-options'] === 'nosniff' };
}

const loopback = createLocalServerGuard();

describe('Host: loopback names are parsed, not prefix-matched', () => {
  it.each(LOOPBACK_HOSTS)('accepts Host %s', (host) => {
    expect(check(loopback, 'GET', { host }).refusal).toBeUndefined();
    expect(check(loopback, 'POST', { host }).refusal).toBeUndefined();
  });

  it.each(REBINDING_HOSTS)('refuses Host %s with 403', (host) => {
    expect(check(loopback, 'GET', { host }).refusal).toEqual({
      status: 403,
      message: expect.stringMatching(/answers requests for localhost, 127\.0\.0\.1 or \[::1\] only/),
    });
  });

  it('refuses a request without Host and a malformed Host', () => {
    for (const host of [undefined, '', 'localhost:80:80', 'localhost:port', 'local host', '[::1', 'user@localhost']) {
      expect(check(loopback, 'GET', host === undefined ? {} : { host }).refusal?.status, String(host)).toBe(403);
    }
  });

  it('answers 400 to two Host headers (RFC 9112), even two loopback ones', () => {
    for (const hosts of [
      ['127.0.0.1:8787', 'evil.example'],
      ['localhost', 'localhost'],
      ['evil.example', '127.0.0.1'],
    ]) {
      expect(check(loopback, 'GET', { host: hosts }).refusal, hosts.join(' ')).toEqual({ status: 400, message: expect.stringContaining('one Host header') });
    }
    expect(check(loopback, 'GET', { Host: '127.0.0.1', HOST: 'evil.example' } as Record<string, string>).refusal?.status).toBe(400);
  });

  it('reads the name out of a Host header', () => {
    expect(hostNameOf('LocalHost:8787')).toBe('localhost');
    expect(hostNameOf('[::1]:8788')).toBe('[::1]');
    expect(hostNameOf('127.0.0.1')).toBe('127.0.0.1');
    expect(hostNameOf('a:b:c')).toBeUndefined();
    expect(isLoopbackName('127.255.255.254')).toBe(true);
    expect(isLoopbackName('127.256.0.1')).toBe(false);
    expect(isLoopbackName('128.0.0.1')).toBe(false);
    expect(isLoopbackName('::1')).toBe(false);
  });

  it('knows which interfaces are loopback', () => {
    expect(['127.0.0.1', '::1', 'localhost', '[::1]'].map(isLoopbackInterface)).toEqual([true, true, true, true]);
    expect(['0.0.0.0', '::', '192.168.1.5'].map(isLoopbackInterface)).toEqual([false, false, false]);
  });
});

describe('absolute-form request target (RFC 9112 §3.2.2): its authority must be allowed too', () => {
  it('refuses a rebound name in the target behind a loopback Host', () => {
    const targets = [
      'http://evil.example/_emulator/state',
      'http://127.0.0.1.evil.example:8787/x',
      'https://evil.example/',
      'http://user@127.0.0.1/x',
      'http://127.1:8787/x',
    ];
    for (const target of targets) {
      expect(check(loopback, 'GET', { host: '127.0.0.1:8787' }, target).refusal, target).toEqual({
        status: 403,
        message: expect.stringContaining('request target'),
      });
    }
  });

  it('refuses a loopback target behind a rebound Host', () => {
    expect(check(loopback, 'GET', { host: 'evil.example' }, 'http://127.0.0.1:8787/x').refusal?.status).toBe(403);
  });

  it('accepts a loopback target and routes by its path and query', () => {
    const answer = check(loopback, 'GET', { host: '127.0.0.1:8787' }, 'http://localhost:8787/v1/openapi?x=1');
    expect(answer.refusal).toBeUndefined();
    expect(answer.url).toBe('/v1/openapi?x=1');
  });

  it('takes the target authority as the server origin of a change', () => {
    const answer = check(loopback, 'POST', { host: '127.0.0.1:8787', origin: 'http://localhost:8787' }, 'http://localhost:8787/x');
    expect(answer.refusal).toBeUndefined();
  });

  it('answers 400 to a target that is neither a path nor a URL', () => {
    for (const target of ['x:y:z', 'not a target', 'ftp://localhost/x', 'localhost:8787']) {
      expect(check(loopback, 'GET', { host: 'localhost' }, target).refusal?.status, target).toBe(400);
    }
  });
});

describe('a state change from a page: its own origin or an allowed one', () => {
  const host = '127.0.0.1:8787';

  it('accepts the server origin (in any spelling URL gives it) and a request from no page (curl, a worker)', () => {
    for (const origin of ['http://127.0.0.1:8787', 'HTTP://127.0.0.1:8787', undefined]) {
      expect(check(loopback, 'POST', origin === undefined ? { host } : { host, origin }).refusal, String(origin)).toBeUndefined();
    }
    expect(check(loopback, 'POST', { host: 'localhost', origin: 'http://localhost:80' }).refusal).toBeUndefined();
  });

  it('refuses another local server (port, scheme or loopback name), another site, `null`, a malformed one', () => {
    const origins = [
      'http://127.0.0.1:3000',
      'https://127.0.0.1:8787',
      'http://localhost:8787',
      'http://[::1]:8787',
      'http://evil.example:8787',
      'null',
      'file://',
      'not a url',
    ];
    for (const origin of origins) {
      for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
        expect(check(loopback, method, { host, origin }).refusal, `${method} ${origin}`).toEqual({
          status: 403,
          message: expect.stringContaining('own pages and the --allowed-origins only'),
        });
      }
      for (const method of ['GET', 'HEAD', 'OPTIONS']) expect(check(loopback, method, { host, origin }).refusal, `${method} ${origin}`).toBeUndefined();
    }
  });

  it('without Origin, reads Sec-Fetch-Site: same-origin and none pass, same-site and cross-site do not', () => {
    expect(check(loopback, 'POST', { host, 'sec-fetch-site': 'same-origin' }).refusal).toBeUndefined();
    expect(check(loopback, 'POST', { host, 'sec-fetch-site': 'none' }).refusal).toBeUndefined();
    for (const site of ['same-site', 'cross-site', 'bogus']) expect(check(loopback, 'POST', { host, 'sec-fetch-site': site }).refusal?.status, site).toBe(403);
  });

  it('accepts an --allowed-origins page, and only that one', () => {
    const guard = createLocalServerGuard({ allowedOrigins: parseAllowedOrigins('http://localhost:5173, https://app.dev.example') });
    expect(check(guard, 'POST', { host, origin: 'http://localhost:5173' }).refusal).toBeUndefined();
    expect(check(guard, 'POST', { host, origin: 'https://app.dev.example' }).refusal).toBeUndefined();
    for (const origin of ['http://localhost:5174', 'http://app.dev.example', 'https://evil.app.dev.example'])
      expect(check(guard, 'POST', { host, origin }).refusal?.status, origin).toBe(403);
  });

  it('parses --allowed-origins and refuses a path, a bare name or another scheme naming the option', () => {
    expect(parseAllowedOrigins(['http://LOCALHOST:5173/', 'http://localhost:5173,https://a.example:443'])).toEqual([
      'http://localhost:5173',
      'https://a.example',
    ]);
    expect(parseAllowedOrigins(undefined)).toEqual([]);
    for (const bad of ['localhost:5173', 'http://localhost:5173/app', 'http://a.example?x', 'ftp://a.example', 'null', '*', 42]) {
      expect(() => parseAllowedOrigins(bad), String(bad)).toThrow(ConfigError);
      expect(() => parseAllowedOrigins(bad)).toThrow(/^--allowed-origins must be origins/);
    }
  });
});

describe('nosniff on every answer', () => {
  it('is set on accepted and refused requests alike', () => {
    expect(check(loopback, 'GET', { host: 'localhost' }).nosniff).toBe(true);
    expect(check(loopback, 'GET', { host: 'evil.example' }).nosniff).toBe(true);
    expect(check(loopback, 'GET', { host: ['a', 'b'] }).nosniff).toBe(true);
  });
});

describe('--allowed-hosts', () => {
  it('adds exact names and, with a leading dot, a name and every name below it', () => {
    const guard = createLocalServerGuard({ allowedHosts: parseAllowedHosts('emulator, .dev.example') });
    for (const host of ['emulator:8787', 'EMULATOR', 'dev.example', 'box.dev.example:8788', 'localhost'])
      expect(check(guard, 'GET', { host }).refusal, host).toBeUndefined();
    for (const host of ['emulator.evil.example', 'xdev.example', 'evil.example']) expect(check(guard, 'GET', { host }).refusal, host).toBeDefined();
    expect(check(guard, 'POST', { host: 'emulator:8787', origin: 'http://emulator:8787' }).refusal).toBeUndefined();
    // An allowed name is not an allowed origin: another page on it is another origin.
    expect(check(guard, 'POST', { host: 'emulator:8787', origin: 'http://box.dev.example:3000' }).refusal?.status).toBe(403);
  });

  it("hosts: 'any' answers every name and keeps the other rules", () => {
    const guard = createLocalServerGuard({ hosts: 'any' });
    expect(check(guard, 'GET', { host: '10.1.2.3:9464' }).refusal).toBeUndefined();
    expect(check(guard, 'GET', { host: ['a', 'b'] }).refusal?.status).toBe(400);
    expect(check(guard, 'POST', { host: '10.1.2.3:9464', origin: 'http://evil.example' }).refusal?.status).toBe(403);
  });

  it('takes a list, drops duplicates, and refuses a scheme, a port or a path naming the option', () => {
    expect(parseAllowedHosts(['a', 'B,a', ' '])).toEqual(['a', 'b']);
    expect(parseAllowedHosts(undefined)).toEqual([]);
    for (const bad of ['http://emulator', 'emulator:8787', 'emulator/x', '*', 'a..b', 42]) {
      expect(() => parseAllowedHosts(bad), String(bad)).toThrow(ConfigError);
      expect(() => parseAllowedHosts(bad)).toThrow(/^--allowed-hosts must be host names without scheme or port/);
    }
  });
});
