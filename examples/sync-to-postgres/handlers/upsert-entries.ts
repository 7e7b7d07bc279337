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
import { createTables, table, upsertNewest } from '../entries-table.js';

export default defineBatchHandler({
  type: 'source_entry.updated',
  maxBatchSize: 100,
  async setup(ctx) {
    const connectionString = process.env.DATABASE_URL;
    if (connectionString === undefined || connectionString === '') throw new Error('DATABASE_URL is not set');
    const pool = new pg.Pool({ connectionString, max: Number(process.env.SYNC_POOL_MAX ?? 4) });
    try {
      await createTables(pool, { changes: false });
    } catch (err) {
      await pool.end();
      throw err;
    }
    ctx.log.debug({ table }, 'pool opened, table ready');
    return { pool };
  },
  async handleBatch(events, ctx) {
    const written = await upsertNewest(ctx.resources.pool, events);
    // Fewer rows written than events: redeliveries, older events arriving late, or several events of one entry.
    ctx.log.debug({ events: events.length, written }, 'entries synced');
  },
  async teardown(ctx) {
    await ctx.resources.pool.end();
  },
});
