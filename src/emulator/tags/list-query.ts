import { createHash } from 'node:crypto';
import { HttpProblem } from '../http/problem.js';
import { ErrorBag, isUuid } from './seeding.js';
import type { ManagedTag, ManagedTagType } from './store.js';

/**
 * Query parameters of `GET /v1/managed-tags`. The spec names `type`, `parentId`, `createdFrom`,
 * `createdTo`, `updatedFrom`, `updatedTo` and `after`, but not the name filter or the page size:
 * we chose `name` (case-insensitive containment) and `limit` (default 50, 1..500).
 */
export const DEFAULT_TAG_PAGE_SIZE = 50;
export const MAX_TAG_PAGE_SIZE = 500;

export interface TagFilters {
  name?: string;
  type?: ManagedTagType;
  parentId?: string;
  createdFrom?: number;
  createdTo?: number;
  updatedFrom?: number;
  updatedTo?: number;
}

export interface TagListQuery {
  filters: TagFilters;
  /** Raw filter values as given, for the cursor's fingerprint. */
  fingerprint: string;
  limit: number;
  /** Last ID of the previous page. */
  afterId?: string;
}

const FILTER_NAMES = ['name', 'type', 'parentId', 'createdFrom', 'createdTo', 'updatedFrom', 'updatedTo'] as const;
const DATE_FILTERS = ['createdFrom', 'createdTo', 'updatedFrom', 'updatedTo'] as const;

export function parseTagListQuery(query: URLSearchParams): TagListQuery {
  const bag = new ErrorBag();
  const filters: TagFilters = {};
  for (const key of [...FILTER_NAMES, 'after', 'limit']) {
    if (query.getAll(key).length > 1) bag.add(key, `${key} may be given once.`);
  }
  const name = query.get('name');
  if (name !== null && name !== '') filters.name = name;
  const type = query.get('type');
  if (type !== null) {
    if (type === 'Text' || type === 'LocalizedText') filters.type = type;
    else bag.add('type', `type must be Text or LocalizedText (got ${type}).`);
  }
  const parentId = query.get('parentId');
  if (parentId !== null) {
    if (isUuid(parentId)) filters.parentId = parentId.toLowerCase();
    else bag.add('parentId', 'parentId must be a UUID.');
  }
  for (const key of DATE_FILTERS) {
    const raw = query.get(key);
    if (raw === null) continue;
    const ms = Date.parse(raw);
    if (Number.isNaN(ms) || !/^\d{4}-\d{2}-\d{2}/.test(raw)) bag.add(key, `${key} must be an ISO 8601 timestamp.`);
    else filters[key] = ms;
  }
  let limit = DEFAULT_TAG_PAGE_SIZE;
  const rawLimit = query.get('limit');
  if (rawLimit !== null) {
    const n = Number(rawLimit);
    if (!Number.isInteger(n) || n < 1 || n > MAX_TAG_PAGE_SIZE) bag.add('limit', `limit must be an integer 1..${MAX_TAG_PAGE_SIZE}.`);
    else limit = n;
  }
  const fingerprint = fingerprintOf(query);
  const result: TagListQuery = { filters, fingerprint, limit };
  const after = query.get('after');
  if (after !== null) {
    const cursor = decodeCursor(after);
    if (!cursor) bag.add('after', 'after is not a cursor returned by this endpoint.');
    else if (cursor.f !== fingerprint) {
      // Spec: "filters must be kept when following cursors" — a cursor is only valid for the filter set it came from.
      bag.add('after', 'The filters differ from those of the request that returned this cursor.');
    } else result.afterId = cursor.id;
  }
  if (!bag.empty) throw new HttpProblem(400, 'One or more validation errors occurred.', bag.errors);
  return result;
}

/** Stable hash of the filter values (not of `after` or `limit`: the page size may change between pages). */
function fingerprintOf(query: URLSearchParams): string {
  const parts = FILTER_NAMES.map((k) => `${k}=${query.get(k) ?? ''}`).join('&');
  return createHash('sha256').update(parts).digest('base64url').slice(0, 16);
}

interface Cursor {
  id: string;
  f: string;
}

export function encodeCursor(cursor: Cursor): string {
  return Buffer.from(JSON.stringify(cursor), 'utf8').toString('base64url');
}

function decodeCursor(raw: string): Cursor | undefined {
  try {
    const parsed = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8')) as unknown;
    if (typeof parsed === 'object' && parsed !== null) {
      const { id, f } = parsed as Record<string, unknown>;
      if (typeof id === 'string' && typeof f === 'string') return { id, f };
    }
  } catch {
    // falls through: not a cursor
  }
  return undefined;
}

/** Every filter combines with AND (spec: List managed tags); the date bounds are inclusive. */
export function matchesTagFilters(tag: ManagedTag, f: TagFilters): boolean {
  if (f.name !== undefined && !tag.displayName.toLowerCase().includes(f.name.toLowerCase())) return false;
  if (f.type !== undefined && tag.type !== f.type) return false;
  if (f.parentId !== undefined && tag.parentId !== f.parentId) return false;
  const created = Date.parse(tag.createdAt);
  const updated = Date.parse(tag.lastModifiedAt);
  if (f.createdFrom !== undefined && created < f.createdFrom) return false;
  if (f.createdTo !== undefined && created > f.createdTo) return false;
  if (f.updatedFrom !== undefined && updated < f.updatedFrom) return false;
  if (f.updatedTo !== undefined && updated > f.updatedTo) return false;
  return true;
}

export interface TagPage {
  items: ManagedTag[];
  after?: string;
  totalCount: number;
}

export function pageTags(sorted: readonly ManagedTag[], q: TagListQuery): TagPage {
  const matching = sorted.filter((t) => matchesTagFilters(t, q.filters));
  // Keyset paging on the ID order: a tag deleted between pages does not shift the next page.
  const rest = q.afterId === undefined ? matching : matching.filter((t) => t.id > q.afterId!);
  const items = rest.slice(0, q.limit);
  const page: TagPage = { items, totalCount: matching.length };
  if (rest.length > q.limit) page.after = encodeCursor({ id: items[items.length - 1]!.id, f: q.fingerprint });
  return page;
}
