import * as z from 'zod';
import { entryKey } from '../../ingest/index.js';
import type { EmulatorContext } from '../context.js';
import { HttpProblem } from '../http/problem.js';
import { parseQuery } from '../http/query.js';
import type { OperationSpec } from '../openapi/operation.js';
import { answer, pathParameter, problem, validation } from '../openapi/responses.js';
import { authorizeRead } from './access.js';
import { entryReadShape, IncompatibleValueError, type ReadEntry } from './read-shape.js';
import { SourceEntry, SourceEntryList } from './schemas.js';
import type { EntryRecord, SourceRecord, SourceStore } from './store.js';

/** Spec, Limits: "IDs per source entries read: 1 to 100". */
export const MAX_IDS_PER_READ = 100;

const READ_QUERY = {
  id: {
    required: true,
    description: `Entry IDs, repeated (\`id=a&id=b\`): 1 to ${MAX_IDS_PER_READ} distinct IDs; duplicates are collapsed, results follow the requested order.`,
    example: ['product-1', 'product-2'],
    schema: z
      .array(z.string().min(1, 'An id must be a non-empty string.'), {
        error: (issue) => (issue.input === undefined ? 'At least one id is required (the source cannot be listed in full).' : undefined),
      })
      // Duplicates are collapsed (spec), so they do not count toward the limit.
      .refine((ids) => new Set(ids).size <= MAX_IDS_PER_READ, {
        error: (issue) => `At most ${MAX_IDS_PER_READ} distinct ids may be read at once (got ${new Set(issue.input as string[]).size}).`,
      }),
  },
};

const source = { tag: 'Sources', security: { kind: 'tenant', scopes: [] } } as const;
const sourceId = pathParameter('Customer-facing source ID within the tenant.', 'products');
const readErrors = {
  '403': problem('The credential is not granted this source.'),
  '409': problem('A stored value is incompatible with the current property type.'),
};

const READ_ENTRIES: OperationSpec = {
  ...source,
  method: 'GET',
  path: '/v1/sources/{sourceId}/entries',
  operationId: 'readEntries',
  summary: 'Read source entries by ID.',
  description: 'Values are typed by the current source-property configuration; missing or deleted entries are omitted.',
  pathParameters: { sourceId },
  query: READ_QUERY,
  responses: {
    '200': answer('The entries found, in the requested order.', SourceEntryList),
    '400': validation('No `id` parameter (the source cannot be listed in full), an empty one, or more than 100 distinct IDs.'),
    '404': problem('Unknown source.'),
    ...readErrors,
  },
};

const READ_ENTRY: OperationSpec = {
  ...source,
  method: 'GET',
  path: '/v1/sources/{sourceId}/entries/{entryId}',
  operationId: 'readEntry',
  summary: 'Read a single source entry.',
  pathParameters: { sourceId, entryId: pathParameter('Entry ID (compared case-insensitively).', 'product-1') },
  responses: {
    '200': answer('The entry.', SourceEntry),
    '404': problem('Unknown source or entry.'),
    ...readErrors,
  },
};

/**
 * `GET /v1/sources/{sourceId}/entries?id=..` and `GET /v1/sources/{sourceId}/entries/{entryId}`
 * (spec: Read source entries by ID, Read a single source entry). Values are typed by the current
 * configuration; a stored value the current type cannot represent answers 409.
 */
export function registerReadRoutes(ctx: EmulatorContext, store: SourceStore): void {
  ctx.router.add(READ_ENTRIES, ({ req, params, query }) => {
    const sourceId = params.sourceId!;
    const principal = authorizeRead(ctx, req, sourceId);
    const { id: ids } = parseQuery(READ_QUERY, query);
    const record = requireSource(store, principal.tenant, sourceId);
    // Spec: results follow the requested order; duplicates collapse (case-insensitively, the way
    // entry IDs are keyed); missing entries are omitted.
    const seen = new Set<string>();
    const items: ReadEntry[] = [];
    for (const id of ids) {
      const key = entryKey(id);
      if (seen.has(key)) continue;
      seen.add(key);
      const entry = record.entries.get(key);
      if (entry) items.push(readOrConflict(entry, record));
    }
    const body: { items: ReadEntry[] } = { items };
    return { status: 200, body };
  });

  ctx.router.add(READ_ENTRY, ({ req, params }) => {
    const sourceId = params.sourceId!;
    const principal = authorizeRead(ctx, req, sourceId);
    const record = requireSource(store, principal.tenant, sourceId);
    const entry = record.entries.get(entryKey(params.entryId!));
    if (!entry) throw new HttpProblem(404, `Entry '${params.entryId}' does not exist in source '${sourceId}'.`);
    return { status: 200, body: readOrConflict(entry, record) };
  });
}

export function requireSource(store: SourceStore, tenant: string, sourceId: string): SourceRecord {
  const record = store.get(tenant, sourceId);
  if (!record) throw new HttpProblem(404, `Source '${sourceId}' does not exist.`);
  return record;
}

function readOrConflict(entry: EntryRecord, record: SourceRecord): ReadEntry {
  try {
    return entryReadShape(entry, record.properties, true);
  } catch (err) {
    if (err instanceof IncompatibleValueError) {
      throw new HttpProblem(409, `A stored value is incompatible with the current property type: ${err.message}.`);
    }
    throw err;
  }
}
