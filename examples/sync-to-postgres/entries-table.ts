/**
 * The table both handlers of this example keep: one row per `(source_id, entry_id)`, the entry's
 * properties as JSONB and the `sequence` of the event that wrote it; and, for the transactional
 * handler, `<table>_changes`, one row per event. Outside the handlers folders, so the loader does
 * not take it for a handler.
 */
import type { SourceEntryUpdatedEvent } from 'durable-worker';

export const table = process.env.SYNC_TABLE ?? 'source_entries';
if (!/^[a-z_][a-z0-9_]{0,54}$/.test(table)) throw new Error(`SYNC_TABLE must be a plain lower-case SQL identifier (got ${JSON.stringify(table)})`);

const ENTRIES = `CREATE TABLE IF NOT EXISTS ${table} (
  source_id  text        NOT NULL,
  entry_id   text        NOT NULL,
  sequence   numeric(20) NOT NULL,
  properties jsonb       NOT NULL,
  synced_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (source_id, entry_id)
)`;

// No key at all: a row per event, and a row twice would mean an event applied twice.
const CHANGES = `CREATE TABLE IF NOT EXISTS ${table}_changes (
  event_id   text        NOT NULL,
  source_id  text        NOT NULL,
  entry_id   text        NOT NULL,
  sequence   numeric(20) NOT NULL,
  properties jsonb       NOT NULL
)`;

/** Anything with pg's `query(text)`: a pg Pool or Client, or a test database. */
export interface Queryable {
  query(text: string, values?: unknown[]): Promise<{ rowCount?: number | null }>;
}

/** Creates the entries table, and the history too with `changes`. Two threads may race on CREATE: the loser's error means "exists" (23505/42P07). */
export async function createTables(db: Queryable, options: { changes: boolean }): Promise<void> {
  for (const ddl of options.changes ? [ENTRIES, CHANGES] : [ENTRIES]) {
    try {
      await db.query(ddl);
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code !== '23505' && code !== '42P07') throw err;
    }
  }
}

const propertiesOf = (event: SourceEntryUpdatedEvent) => JSON.stringify(Object.fromEntries(event.data.current.properties.map((p) => [p.id, p.value])));

/**
 * The newest event per entry: one statement may not touch a row twice (ON CONFLICT DO UPDATE), and
 * the older event of an entry has nothing to write next to a newer one. Sequences are decimal strings
 * that may exceed 2^53: compared as BigInt, never as a JS number.
 */
function newestPerEntry(events: readonly SourceEntryUpdatedEvent[]): SourceEntryUpdatedEvent[] {
  const newest = new Map<string, SourceEntryUpdatedEvent>();
  for (const event of events) {
    const key = JSON.stringify([event.data.sourceId, event.data.entryId]);
    const seen = newest.get(key);
    if (seen === undefined || BigInt(seen.sequence) < BigInt(event.sequence)) newest.set(key, event);
  }
  return [...newest.values()];
}

/**
 * Writes the newest state of each entry in one statement whatever the batch size (the rows travel as
 * four arrays, unnest()ed into rows), only where the event is newer than the row. Resolves with the
 * rows written.
 */
export async function upsertNewest(db: Queryable, events: readonly SourceEntryUpdatedEvent[]): Promise<number> {
  const rows = newestPerEntry(events);
  const result = await db.query(
    `INSERT INTO ${table} (source_id, entry_id, sequence, properties)
     SELECT * FROM unnest($1::text[], $2::text[], $3::numeric[], $4::jsonb[])
     ON CONFLICT (source_id, entry_id) DO UPDATE
       SET sequence = EXCLUDED.sequence, properties = EXCLUDED.properties, synced_at = now()
       WHERE ${table}.sequence < EXCLUDED.sequence`,
    [rows.map((e) => e.data.sourceId), rows.map((e) => e.data.entryId), rows.map((e) => e.sequence), rows.map(propertiesOf)],
  );
  return result.rowCount ?? 0;
}

/** Appends one history row per event, in one statement. */
export async function appendChanges(db: Queryable, events: readonly SourceEntryUpdatedEvent[]): Promise<void> {
  await db.query(
    `INSERT INTO ${table}_changes (event_id, source_id, entry_id, sequence, properties)
     SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::numeric[], $5::jsonb[])`,
    [events.map((e) => e.id), events.map((e) => e.data.sourceId), events.map((e) => e.data.entryId), events.map((e) => e.sequence), events.map(propertiesOf)],
  );
}
