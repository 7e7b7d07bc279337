/**
 * Keeps a PostgreSQL table in step with a source: one row per entry, its properties as JSONB.
 *
 * Idempotent by entry id and sequence: an upsert writes only when the event's sequence is newer
 * than the row's. The worker already skips events a handler finished (idempotency store), but a
 * handler that crashed after its write is run again, and batches of different subjects may commit
 * in any order; the sequence guard makes both harmless (sequences grow by 1 per tenant stream).
 */
import pg from 'pg';
import { defineHandler, PermanentError } from 'durable-worker';
import { createTables } from '../../../examples/sync-to-postgres/entries-table.js';

const table = process.env.SYNC_TABLE ?? 'source_entries';
if (!/^[a-z_][a-z0-9_]{0,62}$/.test(table)) throw new Error(`SYNC_TABLE must be a plain lower-case SQL identifier (got ${JSON.stringify(table)})`);

/** One pool per thread (handlers run in worker threads by default); idle clients do not hold the process. */
export const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 4, idleTimeoutMillis: 5_000, allowExitOnIdle: true });

let ready: Promise<void> | undefined;

/** Creates the table once per thread (the example's own DDL); a failure is tried again on the next event. */
function ensureTable(): Promise<void> {
  ready ??= createTables(pool, { changes: false }).catch((err: unknown) => {
    ready = undefined;
    throw err;
  });
  return ready;
}

export default defineHandler({
  type: 'source_entry.updated',
  async handle(event, ctx) {
    if (process.env.DATABASE_URL === undefined) throw new PermanentError('DATABASE_URL is not set');
    await ensureTable();
    const { sourceId, entryId, current } = event.data;
    const properties = Object.fromEntries(current.properties.map((p) => [p.id, p.value]));
    // The sequence is a decimal string that may exceed 2^53: compared as numeric, never as a JS number.
    const result = await pool.query(
      `INSERT INTO ${table} (source_id, entry_id, sequence, properties) VALUES ($1, $2, $3::numeric, $4::jsonb)
       ON CONFLICT (source_id, entry_id) DO UPDATE
         SET sequence = EXCLUDED.sequence, properties = EXCLUDED.properties, synced_at = now()
         WHERE ${table}.sequence < EXCLUDED.sequence`,
      [sourceId, entryId, event.sequence, JSON.stringify(properties)],
    );
    // rowCount 0: the row already holds this event or a newer one (a redelivery, or an older event late).
    ctx.log.debug({ sourceId, entryId, sequence: event.sequence, written: result.rowCount === 1 }, 'entry synced');
  },
});
