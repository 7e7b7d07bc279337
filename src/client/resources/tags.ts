import type { CallOptions } from '../sources.js';
import { pathOf, requireId, type Send } from '../transport.js';

/** Spec: Resources, Managed tag (wire shape). `parentId` is null for a root tag. */
export interface ManagedTag {
  id: string;
  displayName: string;
  type: 'Text' | 'LocalizedText';
  parentId: string | null;
  createdAt: string;
  lastModifiedAt: string;
  createdBy: string;
  updatedBy: string;
}

/** Spec: managed tag list response. `after` is absent on the last page. */
export interface ManagedTagPage {
  items: ManagedTag[];
  after?: string;
  totalCount: number;
}

/**
 * Filters of `GET /v1/managed-tags`, combined with AND. The spec does not name the name filter or
 * the page size; the emulator (and this client) use `name` and `limit`.
 */
export interface ManagedTagFilters {
  /** Case-insensitive containment in the display name. */
  name?: string;
  type?: 'Text' | 'LocalizedText';
  parentId?: string;
  /** Inclusive bounds (ISO 8601 strings or Dates). */
  createdFrom?: string | Date;
  createdTo?: string | Date;
  updatedFrom?: string | Date;
  updatedTo?: string | Date;
}

export interface ManagedTagListOptions extends CallOptions {
  /** Page size sent as `limit`, 1..500 (the emulator's range). Default: the server's (50). */
  pageSize?: number;
}

/** The emulator's ceiling of `limit` (emulator/tags/list-query.ts); a larger page size is refused before sending. */
export const MAX_MANAGED_TAG_PAGE_SIZE = 500;

function filterQuery(filters: ManagedTagFilters): Record<string, string | undefined> {
  const iso = (v: string | Date | undefined): string | undefined => (v instanceof Date ? v.toISOString() : v);
  return {
    name: filters.name,
    type: filters.type,
    parentId: filters.parentId,
    createdFrom: iso(filters.createdFrom),
    createdTo: iso(filters.createdTo),
    updatedFrom: iso(filters.updatedFrom),
    updatedTo: iso(filters.updatedTo),
  };
}

/** Managed tags: list (one page, every page, every tag), get, delete. Reads and delete retry (both are idempotent). */
export class ManagedTagsApi {
  constructor(private readonly send: Send) {}

  /** One page; pass the previous page's `after` with the same filters (spec: filters must be kept when following cursors). */
  async listPage(filters: ManagedTagFilters = {}, options: ManagedTagListOptions & { after?: string } = {}): Promise<ManagedTagPage> {
    const size = options.pageSize;
    if (size !== undefined && (!Number.isInteger(size) || size < 1 || size > MAX_MANAGED_TAG_PAGE_SIZE)) {
      throw new RangeError(`pageSize must be an integer 1..${MAX_MANAGED_TAG_PAGE_SIZE} (got ${size})`);
    }
    const response = await this.send.send({
      method: 'GET',
      path: '/v1/managed-tags',
      query: { ...filterQuery(filters), after: options.after, limit: options.pageSize },
      signal: options.signal,
      retry: true,
    });
    const page = response.body as Partial<ManagedTagPage> | undefined;
    // Liberal: a page without items is empty; a missing totalCount is unknown (-1), never a crash.
    return {
      ...page,
      items: Array.isArray(page?.items) ? page.items : [],
      totalCount: typeof page?.totalCount === 'number' ? page.totalCount : -1,
    } as ManagedTagPage;
  }

  /** Every page in turn, following `after` until the last page. */
  async *pages(filters: ManagedTagFilters = {}, options: ManagedTagListOptions = {}): AsyncGenerator<ManagedTagPage> {
    let after: string | undefined;
    do {
      const page = await this.listPage(filters, { ...options, ...(after ? { after } : {}) });
      yield page;
      after = page.after;
    } while (after);
  }

  /** Every matching tag, in ID order: `for await (const tag of client.managedTags.list({ name: 'colour' }))`. */
  async *list(filters: ManagedTagFilters = {}, options: ManagedTagListOptions = {}): AsyncGenerator<ManagedTag> {
    for await (const page of this.pages(filters, options)) yield* page.items;
  }

  /** One tag; ApiError 404 when absent. */
  async get(id: string, options: CallOptions = {}): Promise<ManagedTag> {
    const response = await this.send.send({ method: 'GET', path: pathOf`/v1/managed-tags/${requireId('id', id)}`, signal: options.signal, retry: true });
    return response.body as ManagedTag;
  }

  /** Deletes a tag (also fine when already absent); ApiError 409 while a card definition references it. */
  async delete(id: string, options: CallOptions = {}): Promise<void> {
    await this.send.send({ method: 'DELETE', path: pathOf`/v1/managed-tags/${requireId('id', id)}`, signal: options.signal, retry: true });
  }
}
