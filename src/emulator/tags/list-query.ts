import { createHash } from 'node:crypto';
import { HttpProblem } from '../http/problem.js';
import { readQuery } from '../http/query.js';
import { TAG_LIST_QUERY } from './schemas.js';
import type { ManagedTag, ManagedTagType } from './store.js';

/**
 * Query parameters of `GET /v1/managed-tags` (schemas.ts). The spec names `type`, `parentId`,
 * `createdFrom`, `createdTo`, `updatedFrom`, `updatedTo` and `after`, but not the name filter or
 * the page size: we chose `name` (case-insensitive containment) and `limit` (default 50, 1..500).
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
  const { value, errors = {} } = readQuery(TAG_LIST_QUERY, query);
  const fingerprint = fingerprintOf(query);
  let afterId: string | undefined;
  const after = query.getAll('after');
  if (after.length === 1) {
    const cursor = decodeCursor(after[0]!);
    if (!cursor) errors.after = ['after is not a cursor returned by this endpoint.'];
    // Spec: "filters must be kept when following cursors" — a cursor is only valid for the filter set it came from.
    else if (cursor.f !== fingerprint) errors.after = ['The filters differ from those of the request that returned this cursor.'];
    else afterId = cursor.id;
  }
  if (value === undefined || Object.keys(errors).length > 0) throw new HttpProblem(400, 'One or more validation errors occurred.', errors);
  const filters: TagFilters = {};
  if (value.name !== undefined && value.name !== '') filters.name = value.name;
  if (value.type !== undefined) filters.type = value.type;
  if (value.parentId !== undefined) filters.parentId = value.parentId.toLowerCase();
  for (const key of DATE_FILTERS) if (value[key] !== undefined) filters[key] = Date.parse(value[key]);
  return { filters, fingerprint, limit: value.limit ?? DEFAULT_TAG_PAGE_SIZE, ...(afterId === undefined ? {} : { afterId }) };
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
