import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { createIdempotencyStore, parseStoreUrl } from '../../src/idempotency/index.js';

function configFailure(url: string): ConfigError {
  try {
    parseStoreUrl(url);
  } catch (err) {
    return err as ConfigError;
  }
  throw new Error(`expected ${url} to be refused`);
}

describe('parseStoreUrl', () => {
  it('recognises every backend', () => {
    expect(parseStoreUrl('memory')).toEqual({ kind: 'memory' });
    expect(parseStoreUrl('sqlite:/var/lib/dw/idem.sqlite')).toEqual({ kind: 'sqlite', path: '/var/lib/dw/idem.sqlite' });
    expect(parseStoreUrl('sqlite:///var/lib/dw/idem.sqlite')).toEqual({ kind: 'sqlite', path: '/var/lib/dw/idem.sqlite' });
    expect(parseStoreUrl('sqlite:data/idem.sqlite', '/srv/app')).toEqual({ kind: 'sqlite', path: resolve('/srv/app', 'data/idem.sqlite') });
    expect(parseStoreUrl('sqlite::memory:')).toEqual({ kind: 'sqlite', path: ':memory:' });
    expect(parseStoreUrl('redis://:pw@cache:6380/2')).toEqual({ kind: 'redis', url: 'redis://:pw@cache:6380/2' });
    expect(parseStoreUrl('rediss://user:pw@cache.example.com')).toMatchObject({ kind: 'redis' });
    expect(parseStoreUrl('postgres://app:pw@db:5432/app')).toMatchObject({ kind: 'postgres' });
    expect(parseStoreUrl('postgresql://app:pw@db/app?sslmode=require')).toMatchObject({ kind: 'postgres' });
    expect(parseStoreUrl('postgres:///app')).toMatchObject({ kind: 'postgres' });
  });

  it.each([
    ['foo:bar', /got "foo:bar"/],
    ['', /got ""/],
    ['sqlite:', /sqlite: needs a file path/],
    ['redis:cache:6379', /expected scheme:\/\//],
    ['redis://', /needs a host|malformed/],
    ['redis://cache/abc', /database must be a number/],
    ['postgres://app:pw@[bad/app', /malformed URL/],
    ['mysql://db/app', /got "mysql:\/\/db\/app"/],
    ['postgres://db:6432/app?pool_mode=statement', /pool_mode must be transaction or session, got statement/],
  ])('refuses %j with a one-line ConfigError naming --idempotency', (url, detail) => {
    const err = configFailure(url);
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.code).toBe('DW_ERR_CONFIG');
    expect(err.option).toBe('--idempotency');
    expect(err.message).toMatch(/^--idempotency must be memory, sqlite:PATH, redis:\/\/\.\.\. or postgres:\/\/\.\.\./);
    expect(err.message).toMatch(detail);
    expect(err.message).not.toContain('\n');
  });

  it('never shows a password in its errors', () => {
    for (const url of ['redis://:s3cret@cache/abc', 'postgres://app:s3cret@[bad/app', 'redis://app:s3cret@']) {
      const err = configFailure(url);
      expect(err.message).not.toContain('s3cret');
      expect(err.message).toContain('***');
    }
  });

  it('refuses a bad URL in createIdempotencyStore before loading any driver', async () => {
    await expect(createIdempotencyStore('foo:bar', { prefix: 'p', doneTtlMs: 1_000 })).rejects.toBeInstanceOf(ConfigError);
  });
});

describe('lazy drivers', () => {
  it('loads no driver for the memory store, and for sqlite only the one it opens', () => {
    // A fresh process: which driver modules did opening a store pull in?
    const script = `
      import { createRequire } from 'node:module';
      const { createIdempotencyStore } = await import(${JSON.stringify(resolve('src/idempotency/index.ts'))});
      const require = createRequire(import.meta.url);
      const loaded = () => [
        ...['better-sqlite3', 'redis', '@redis/client', 'pg'].filter((name) =>
          Object.keys(require.cache).some((path) => path.includes('/node_modules/' + name + '/'))),
        ...(process.moduleLoadList.includes('NativeModule sqlite') ? ['node:sqlite'] : []),
      ];
      const memory = await createIdempotencyStore('memory', { prefix: 'p', doneTtlMs: 1000 });
      const afterMemory = loaded();
      const sqlite = await createIdempotencyStore('sqlite::memory:', { prefix: 'p', doneTtlMs: 1000 });
      console.log(JSON.stringify({ afterMemory, afterSqlite: loaded() }));
      await memory.close(); await sqlite.close();
    `;
    const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(child.status, child.stderr).toBe(0);
    expect(JSON.parse(child.stdout)).toEqual({ afterMemory: [], afterSqlite: ['node:sqlite'] });
  });
});
