import { isAbsolute, resolve } from 'node:path';
import { ConfigError } from '../errors.js';
import { redactUrl } from '../runtime/redact-url.js';
import type { IdempotencyStore, IdempotencyStoreOptions } from './store.js';

export type { ClaimResult, ClaimState, FailureEntry, FailureHistory, IdempotencyStore, IdempotencyStoreOptions } from './store.js';
export { DEFAULT_DONE_TTL_MS } from './store.js';

/** Which adapter a URL selects, and what it needs to open. */
export type StoreLocation = { kind: 'memory' } | { kind: 'sqlite'; path: string } | { kind: 'redis'; url: string } | { kind: 'postgres'; url: string };

const OPTION = '--idempotency';

function invalid(url: string, why?: string): ConfigError {
  const reason = why === undefined ? '' : ` (${why})`;
  return new ConfigError(`${OPTION} must be memory, sqlite:PATH, redis://... or postgres://...${reason} (got "${redactUrl(url)}")`, OPTION);
}

/**
 * Parses `--idempotency` without touching any driver. A relative `sqlite:` path is resolved
 * against `cwd` (default: the process's). Throws ConfigError (never showing a password).
 */
export function parseStoreUrl(url: string, cwd: string = process.cwd()): StoreLocation {
  const text = url.trim();
  if (text === 'memory' || text === 'memory:') return { kind: 'memory' };
  if (text.startsWith('sqlite:')) {
    const path = text.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, ''); // sqlite:///abs -> /abs
    if (path === '') throw invalid(url, 'sqlite: needs a file path');
    if (path === ':memory:') return { kind: 'sqlite', path };
    return { kind: 'sqlite', path: isAbsolute(path) ? path : resolve(cwd, path) };
  }
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(text)?.[1]?.toLowerCase();
  if (scheme === 'redis' || scheme === 'rediss') {
    const parsed = parseUrl(url, text);
    if (parsed.hostname === '') throw invalid(url, 'the URL needs a host');
    const db = parsed.pathname.replace(/^\//, '');
    if (db !== '' && !/^\d+$/.test(db)) throw invalid(url, 'the Redis database must be a number');
    return { kind: 'redis', url: text };
  }
  if (scheme === 'postgres' || scheme === 'postgresql') {
    const parsed = parseUrl(url, text);
    // postgres:///db connects through the local socket: no host is fine there.
    if (parsed.hostname === '' && !/^postgres(ql)?:\/\/\//i.test(text)) throw invalid(url, 'the URL needs a host');
    // A pooler in front (postgres-pool.ts, poolTarget).
    const poolMode = parsed.searchParams.get('pool_mode');
    if (poolMode !== null && poolMode !== 'transaction' && poolMode !== 'session')
      throw invalid(url, `pool_mode must be transaction or session, got ${poolMode}`);
    return { kind: 'postgres', url: text };
  }
  throw invalid(url);
}

function parseUrl(original: string, text: string): URL {
  if (!/^[a-z]+:\/\//i.test(text)) throw invalid(original, 'expected scheme://');
  try {
    return new URL(text);
  } catch {
    throw invalid(original, 'malformed URL');
  }
}

/**
 * Opens the idempotency store a URL names: `memory`, `sqlite:PATH` (relative or absolute; the
 * folder is created), `redis://`/`rediss://` (password and db in the URL), `postgres://`/
 * `postgresql://`. Drivers are imported only for the backend in use. Throws ConfigError for a bad
 * URL and DW_ERR_STORE when the backend cannot be reached or prepared.
 */
export async function createIdempotencyStore(url: string, options: IdempotencyStoreOptions): Promise<IdempotencyStore> {
  const location = parseStoreUrl(url);
  const common = {
    prefix: options.prefix,
    doneTtlMs: options.doneTtlMs,
    ...(options.onBackgroundError === undefined ? {} : { onBackgroundError: options.onBackgroundError }),
  };
  switch (location.kind) {
    case 'memory': {
      const { MemoryIdempotencyStore } = await import('./memory.js');
      // One process: the prefix would isolate nothing, every store instance is its own namespace.
      return new MemoryIdempotencyStore({
        doneTtlMs: options.doneTtlMs,
        ...(options.maxEntries === undefined ? {} : { maxEntries: options.maxEntries }),
      });
    }
    case 'sqlite': {
      const { SqliteIdempotencyStore } = await import('./sqlite.js');
      return SqliteIdempotencyStore.open({ ...common, path: location.path });
    }
    case 'redis': {
      const { RedisIdempotencyStore } = await import('./redis.js');
      return RedisIdempotencyStore.open({ ...common, url: location.url });
    }
    case 'postgres': {
      const { PostgresIdempotencyStore } = await import('./postgres.js');
      return PostgresIdempotencyStore.open({
        ...common,
        url: location.url,
        ...(options.poolSize === undefined ? {} : { poolSize: options.poolSize }),
      });
    }
  }
}
