/**
 * Keeps a PostgreSQL table in step with a source: one row per entry, its properties as JSONB, written
 * in bulk: one multi-row upsert per batch of events (`handleBatch`), through a pool opened in `setup`
 * and closed in `teardown` (one per worker thread, or one with `--isolation none`).
 *
 * Idempotent by entry id and sequence: a row is written only when the event's sequence is newer than
 * the row's. The worker already skips events this handler finished (idempotency store), but a batch
 * that failed after its write is run again, and batches of different subjects may commit in any
 * order; the sequence guard makes both harmless (sequences grow by 1 per tenant stream).
 */
import pg from 'pg';
import { defineBatchHandler } from 'durable-worker';
import type { SourceEntryUpdatedEvent } from 'durable-worker';

const table = process.env.SYNC_TABLE ?? 'source_entries';
if (!/^[a-z_][a-z0-9_]{0,62}$/.test(table)) throw new Error(`SYNC_TABLE must be a plain lower-case SQL identifier (got ${JSON.stringify(table)})`);

/** Two threads may race on CREATE: the loser's error means "exists" (23505/42P07). */
async function createTable(pool: pg.Pool): Promise<void> {
  try {
    await pool.query(
      `CREATE TABLE IF NOT EXISTS ${table} (
         source_id  text        NOT NULL,
         entry_id   text        NOT NULL,
         sequence   numeric(20) NOT NULL,
         properties jsonb       NOT NULL,
         synced_at  timestamptz NOT NULL DEFAULT now(),
         PRIMARY KEY (source_id, entry_id)
       )`,
    );
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code !== '23505' && code !== '42P07') throw err;
  }
}

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

export default defineBatchHandler({
  type: 'source_entry.updated',
  maxBatchSize: 100,
  async setup(ctx) {
    const connectionString = process.env.DATABASE_URL;
    if (connectionString === undefined || connectionString === '') throw new Error('DATABASE_URL is not set');
    const pool = new pg.Pool({ connectionString, max: Number(process.env.SYNC_POOL_MAX ?? 4) });
    try {
      await createTable(pool);
    } catch (err) {
      await pool.end();
      throw err;
    }
    ctx.log.debug({ table }, 'pool opened, table ready');
    return { pool };
  },
  async handleBatch(events, ctx) {
    const rows = newestPerEntry(events);
    // One statement whatever the batch size: the rows travel as four arrays, unnest()ed into rows.
    const result = await ctx.resources.pool.query(
      `INSERT INTO ${table} (source_id, entry_id, sequence, properties)
       SELECT * FROM unnest($1::text[], $2::text[], $3::numeric[], $4::jsonb[])
       ON CONFLICT (source_id, entry_id) DO UPDATE
         SET sequence = EXCLUDED.sequence, properties = EXCLUDED.properties, synced_at = now()
         WHERE ${table}.sequence < EXCLUDED.sequence`,
      [
        rows.map((e) => e.data.sourceId),
        rows.map((e) => e.data.entryId),
        rows.map((e) => e.sequence),
        rows.map((e) => JSON.stringify(Object.fromEntries(e.data.current.properties.map((p) => [p.id, p.value])))),
      ],
    );
    // Fewer rows written than events: redeliveries, older events arriving late, or several events of one entry.
    ctx.log.debug({ events: events.length, written: result.rowCount }, 'entries synced');
  },
  async teardown(ctx) {
    await ctx.resources.pool.end();
  },
});
