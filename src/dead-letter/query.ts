import { ConfigError } from '../errors.js';
import { matchesPattern } from '../runtime/type-pattern.js';
import { deadLetteredAtMs } from './record.js';
import type { DeadLetterReason, DeadLetterState, StoredDeadLetter } from './sink.js';

/** Which records: every given field must match. */
export interface DeadLetterFilter {
  /** Handler name, exactly (`orders/created`, `@forward`). */
  handler?: string;
  /** Event type: exact, `prefix.*` or `*` (like a handler's `type`). */
  type?: string;
  reason?: DeadLetterReason;
  state?: DeadLetterState;
  /** Dead-lettered at or after this time. */
  since?: Date;
  /** Dead-lettered before this time. */
  until?: Date;
}

/**
 * Where a page ends: records are listed in the order (deadLetteredAt, prefix, id), and the next page
 * starts after this key (keyset paging: records written meanwhile neither shift nor repeat a page).
 */
export interface PageKey {
  atMs: number;
  prefix: string;
  id: string;
}

/** What an adapter answers: up to `limit` records after `after`, in order, matching the filter. */
export interface StoreQuery extends DeadLetterFilter {
  limit: number;
  after?: PageKey;
}

export function pageKeyOf(record: StoredDeadLetter): PageKey {
  return { atMs: deadLetteredAtMs(record), prefix: record.prefix, id: record.id };
}

/** The opaque cursor the CLI prints for the next page (`--after`). */
export function encodeCursor(key: PageKey): string {
  return Buffer.from(JSON.stringify([key.atMs, key.prefix, key.id]), 'utf8').toString('base64url');
}

export function decodeCursor(cursor: string): PageKey {
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (Array.isArray(value) && value.length === 3 && typeof value[0] === 'number' && typeof value[1] === 'string' && typeof value[2] === 'string') {
      return { atMs: value[0], prefix: value[1], id: value[2] };
    }
  } catch {
    // reported below
  }
  throw new ConfigError(`not a page cursor: ${JSON.stringify(cursor.slice(0, 80))} (use the one a previous page printed)`);
}

/** -1, 0 or 1: the listing order. Plain code-unit comparison, the same order everywhere in JS. */
export function comparePageKeys(a: PageKey, b: PageKey): number {
  if (a.atMs !== b.atMs) return a.atMs < b.atMs ? -1 : 1;
  if (a.prefix !== b.prefix) return a.prefix < b.prefix ? -1 : 1;
  if (a.id !== b.id) return a.id < b.id ? -1 : 1;
  return 0;
}

/** The filter, the prefix scope (undefined: every prefix) and the page start, in JS (file and Redis adapters). */
export function matchesQuery(record: StoredDeadLetter, query: Omit<StoreQuery, 'limit'>, prefix: string | undefined): boolean {
  if (prefix !== undefined && record.prefix !== prefix) return false;
  if (query.handler !== undefined && record.handler !== query.handler) return false;
  if (query.reason !== undefined && record.reason !== query.reason) return false;
  if (query.state !== undefined && record.state !== query.state) return false;
  if (query.type !== undefined && !matchesPattern(query.type, record.event.type)) return false;
  const atMs = deadLetteredAtMs(record);
  if (query.since !== undefined && atMs < query.since.getTime()) return false;
  if (query.until !== undefined && atMs >= query.until.getTime()) return false;
  if (query.after !== undefined && comparePageKeys(pageKeyOf(record), query.after) <= 0) return false;
  return true;
}
