import { isAbsolute, resolve } from 'node:path';
import { ConfigError } from '../errors.js';
import { redactUrl } from '../runtime/redact-url.js';
import type { DeadLetterStore } from './store.js';

export type { DeadLetterRecord, DeadLetterSink, StoredDeadLetter, DeadLetterState, DeadLetterReason } from './sink.js';
export type { DeadLetterStore, DeadLetterCount } from './store.js';

/** Which adapter a `--dead-letter` URL selects. */
export type SinkLocation =
  { kind: 'file'; path: string } | { kind: 'sqlite'; path: string } | { kind: 'redis'; url: string } | { kind: 'postgres'; url: string };

const OPTION = '--dead-letter';
export const DEAD_LETTER_URL_HELP = 'must be file:PATH, sqlite:PATH, redis://... or postgres://...';

function invalid(url: string, why?: string): ConfigError {
  return new ConfigError(`${OPTION} ${DEAD_LETTER_URL_HELP}${why === undefined ? '' : ` (${why})`} (got "${redactUrl(url)}")`, OPTION);
}

function localPath(raw: string, cwd: string): string {
  return isAbsolute(raw) ? raw : resolve(cwd, raw);
}

/**
 * Parses `--dead-letter` without touching a driver: `file:PATH` or `file:///abs`, `sqlite:PATH`
 * (relative paths against `cwd`), `redis://`/`rediss://`, `postgres://`/`postgresql://`. Throws
 * ConfigError naming the option, never showing a password.
 */
export function parseDeadLetterUrl(url: string, cwd: string = process.cwd()): SinkLocation {
  const text = url.trim();
  for (const scheme of ['file', 'sqlite'] as const) {
    if (!text.startsWith(`${scheme}:`)) continue;
    let raw = text.slice(scheme.length + 1);
    if (raw.startsWith('//')) {
      try {
        raw = decodeURIComponent(new URL(text).pathname);
      } catch {
        throw invalid(url, `not a valid ${scheme} URL`);
      }
    }
    if (raw === '') throw invalid(url, `${scheme}: needs a path`);
    return { kind: scheme, path: raw === ':memory:' ? raw : localPath(raw, cwd) };
  }
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(text)?.[1]?.toLowerCase();
  const kind = scheme === 'redis' || scheme === 'rediss' ? 'redis' : scheme === 'postgres' || scheme === 'postgresql' ? 'postgres' : undefined;
  if (kind === undefined) throw invalid(url);
  let parsed: URL;
  try {
    parsed = new URL(text);
  } catch {
    throw invalid(url, 'malformed URL');
  }
  // postgres:///db connects through the local socket: no host is fine there.
  if (parsed.hostname === '' && !(kind === 'postgres' && /^postgres(ql)?:\/\/\//i.test(text))) throw invalid(url, 'the URL needs a host');
  return { kind, url: text };
}

/** True for the sinks several hosts can share (what a multi-replica deployment needs). */
export function isSharedSink(location: SinkLocation): boolean {
  return location.kind === 'redis' || location.kind === 'postgres';
}

export interface OpenDeadLetterStoreOptions {
  /** The `--idempotency-prefix` records are written and read under; undefined reads every prefix (and cannot write). */
  prefix: string | undefined;
  /** Folder for relative paths (default: the process's). */
  cwd?: string;
  /** Failures no caller awaits (a dropped connection while reconnecting); the worker logs them. */
  onBackgroundError?: (err: Error) => void;
}

/**
 * Opens the sink a URL names. Drivers are imported only for the backend in use; `file:` opens
 * nothing until the first record. Throws ConfigError for a bad URL and DW_ERR_DEAD_LETTER when the
 * backend cannot be reached or prepared.
 */
export async function openDeadLetterStore(url: string, options: OpenDeadLetterStoreOptions): Promise<DeadLetterStore> {
  const location = parseDeadLetterUrl(url, options.cwd);
  const background = options.onBackgroundError === undefined ? {} : { onBackgroundError: options.onBackgroundError };
  switch (location.kind) {
    case 'file': {
      const { FileDeadLetterStore } = await import('./file-store.js');
      return new FileDeadLetterStore(location.path, options.prefix);
    }
    case 'sqlite': {
      const { SqliteDeadLetterStore } = await import('./sqlite-store.js');
      return SqliteDeadLetterStore.open({ path: location.path, prefix: options.prefix });
    }
    case 'redis': {
      const { RedisDeadLetterStore } = await import('./redis-store.js');
      return RedisDeadLetterStore.open({ url: location.url, prefix: options.prefix, ...background });
    }
    case 'postgres': {
      const { PostgresDeadLetterStore } = await import('./postgres-store.js');
      return PostgresDeadLetterStore.open({ url: location.url, prefix: options.prefix, ...background });
    }
  }
}
