import { describe, expect, it } from 'vitest';
import { Router } from '../../src/handlers/router.js';
import { matchesPattern, validatePattern } from '../../src/runtime/type-pattern.js';

describe('type patterns', () => {
  it('accepts exact, prefix.* and *; refuses the rest with a reason', () => {
    for (const ok of ['source_entry.updated', 'source_entry.*', '*', 'a.b.*']) expect(validatePattern(ok)).toBeUndefined();
    for (const bad of ['', 'a*', '*.updated', 'a.*.b', '.*', 'a b', 42]) expect(validatePattern(bad)).toBeTypeOf('string');
  });

  it('matches prefix.* only on the dot boundary', () => {
    expect(matchesPattern('source_entry.*', 'source_entry.updated')).toBe(true);
    expect(matchesPattern('source_entry.*', 'source_entry.a.b')).toBe(true);
    expect(matchesPattern('source_entry.*', 'source_entryX.updated')).toBe(false);
    expect(matchesPattern('source_entry.*', 'source_entry')).toBe(false);
    expect(matchesPattern('*', 'anything')).toBe(true);
    expect(matchesPattern('a.b', 'a.b')).toBe(true);
    expect(matchesPattern('a.b', 'a.bc')).toBe(false);
  });
});

describe('Router', () => {
  const handlers = [
    { name: 'exact', types: ['source_entry.updated'] },
    { name: 'prefix', types: ['source_entry.*'] },
    { name: 'all', types: ['*'] },
    { name: 'twice', types: ['source_entry.updated', 'source_entry.*'] },
    { name: 'cards', types: ['card.*'] },
  ];
  const router = new Router(handlers);

  it('routes a type to every matching handler once, in load order', () => {
    expect(router.route('source_entry.updated').map((h) => h.name)).toEqual(['exact', 'prefix', 'all', 'twice']);
    expect(router.route('source_entry.purged').map((h) => h.name)).toEqual(['prefix', 'all', 'twice']);
    expect(router.route('card.created').map((h) => h.name)).toEqual(['all', 'cards']);
    expect(router.route('user.created').map((h) => h.name)).toEqual(['all']);
  });

  it('caches per type and stays bounded', () => {
    const small = new Router([{ name: 'p', types: ['x.*'] }], { maxCachedTypes: 2 });
    const first = small.route('x.a');
    expect(small.route('x.a')).toBe(first);
    small.route('x.b');
    small.route('x.c');
    expect(small.route('x.a')).not.toBe(first);
    expect(small.route('x.a').map((h) => h.name)).toEqual(['p']);
    expect(new Router([{ name: 'p', types: ['x.*'] }]).route('y.a')).toEqual([]);
  });
});
