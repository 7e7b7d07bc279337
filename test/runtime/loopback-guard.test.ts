import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { LOOPBACK_HOSTS, REBINDING_HOSTS } from '../fixtures/host-names.js';
import { createHostGuard, hostNameOf, isLoopbackInterface, isLoopbackName, parseAllowedHosts } from '../../src/runtime/loopback-guard.js';

describe('loopback names are parsed, not prefix-matched', () => {
  it.each(LOOPBACK_HOSTS)('accepts Host %s', (host) => {
    expect(createHostGuard().refusal('GET', { host })).toBeUndefined();
    expect(createHostGuard().refusal('POST', { host })).toBeUndefined();
  });

  it.each(REBINDING_HOSTS)('refuses Host %s', (host) => {
    expect(createHostGuard().refusal('GET', { host })).toMatch(/answers requests for localhost, 127\.0\.0\.1 or \[::1\] only/);
  });

  it('refuses a request without Host and a malformed Host', () => {
    const guard = createHostGuard();
    for (const host of [undefined, '', 'localhost:80:80', 'localhost:port', 'local host', '[::1', 'user@localhost']) {
      expect(guard.refusal('GET', host === undefined ? {} : { host }), String(host)).toBeDefined();
    }
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

describe('Origin of a state-changing request', () => {
  const guard = createHostGuard();
  const host = '127.0.0.1:8787';

  it('accepts a local origin and a request without Origin (curl, the worker)', () => {
    for (const origin of ['http://localhost:8788', 'http://127.0.0.1:8787', 'http://[::1]:8788', undefined]) {
      expect(guard.refusal('POST', origin === undefined ? { host } : { host, origin }), String(origin)).toBeUndefined();
    }
  });

  it('refuses another origin, `null` and a malformed one on every method but GET, HEAD and OPTIONS', () => {
    for (const origin of ['http://evil.example:8787', 'http://127.0.0.1.evil.example:8787', 'null', 'file://', 'not a url']) {
      for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) expect(guard.refusal(method, { host, origin }), `${method} ${origin}`).toMatch(/local pages only/);
      for (const method of ['GET', 'HEAD', 'OPTIONS']) expect(guard.refusal(method, { host, origin }), `${method} ${origin}`).toBeUndefined();
    }
  });
});

describe('--allowed-hosts', () => {
  it('adds exact names and, with a leading dot, a name and every name below it', () => {
    const guard = createHostGuard(parseAllowedHosts('emulator, .dev.example'));
    for (const host of ['emulator:8787', 'EMULATOR', 'dev.example', 'box.dev.example:8788', 'localhost']) expect(guard.refusal('GET', { host }), host).toBeUndefined();
    for (const host of ['emulator.evil.example', 'xdev.example', 'evil.example']) expect(guard.refusal('GET', { host }), host).toBeDefined();
    expect(guard.refusal('POST', { host: 'emulator:8787', origin: 'http://box.dev.example:3000' })).toBeUndefined();
    expect(guard.refusal('POST', { host: 'emulator:8787', origin: 'http://evil.example' })).toBeDefined();
  });

  it('takes a list, drops duplicates, and refuses a scheme, a port or a path naming the option', () => {
    expect(parseAllowedHosts(['a', 'B,a', ' '])).toEqual(['a', 'b']);
    expect(parseAllowedHosts(undefined)).toEqual([]);
    for (const bad of ['http://emulator', 'emulator:8787', 'emulator/x', '*', 'a..b', 42]) {
      let error: unknown;
      try {
        parseAllowedHosts(bad);
      } catch (err) {
        error = err;
      }
      expect(error, String(bad)).toBeInstanceOf(ConfigError);
      expect((error as Error).message).toMatch(/^--allowed-hosts must be host names without scheme or port/);
    }
  });
});
