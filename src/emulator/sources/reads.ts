import { entryKey } from '../../ingest/index.js';
import type { EmulatorContext } from '../context.js';
import { HttpProblem, validationProblem } from '../http/problem.js';
import { authorizeRead } from './access.js';
import { entryReadShape, IncompatibleValueError, type ReadEntry } from './read-shape.js';
import type { EntryRecord, SourceRecord, SourceStore } from './store.js';

/** Spec, Limits: "IDs per source entries read: 1 to 100". */
export const MAX_IDS_PER_READ = 100;

/**
 * `GET /v1/sources/{sourceId}/entries?id=..` and `GET /v1/sources/{sourceId}/entries/{entryId}`
 * (spec: Read source entries by ID, Read a single source entry). Values are typed by the current
 * configuration; a stored value the current type cannot represent answers 409.
 */
export function registerReadRoutes(ctx: EmulatorContext, store: SourceStore): void {
  ctx.router.add('GET', '/v1/sources/:sourceId/entries', ({ req, params, query }) => {
    const sourceId = params.sourceId!;
    const principal = authorizeRead(ctx, req, sourceId);
    const ids = checkIds(query.getAll('id'));
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

  ctx.router.add('GET', '/v1/sources/:sourceId/entries/:entryId', ({ req, params }) => {
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

function checkIds(ids: string[]): string[] {
  if (ids.length === 0) {
    throw validationProblem({ id: ['At least one id is required (the source cannot be listed in full).'] });
  }
  // Duplicates are collapsed (spec), so they do not count toward the limit.
  const distinct = new Set(ids).size;
  if (distinct > MAX_IDS_PER_READ) {
    throw validationProblem({ id: [`At most ${MAX_IDS_PER_READ} distinct ids may be read at once (got ${distinct}).`] });
  }
  const emptyAt = ids.findIndex((id) => id.length === 0);
  if (emptyAt >= 0) throw validationProblem({ [`id[${emptyAt}]`]: ['An id must be a non-empty string.'] });
  return ids;
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
