/**
 * The transactional variant of handlers/upsert-entries.ts: the same table of entries, plus
 * `<table>_changes`, a history with one row per event, both written through `ctx.tx` in the
 * worker's transaction. The worker writes the events' done marks in that same transaction, so a
 * call's writes commit once or not at all, whatever crashes: the history needs no unique key and no
 * guard against a redelivered event, which a plain `pool.query` could not promise.
 *
 * Needs `--idempotency` to be the PostgreSQL database of these tables (`check` refuses anything
 * else). One call is one transaction: if any event of it fails, the whole call rolls back.
 */
import pg from 'pg';
import { defineBatchHandler } from 'durable-worker';
import { appendChanges, createTables, table, upsertNewest } from '../entries-table.js';

export default defineBatchHandler({
  type: 'source_entry.updated',
  maxBatchSize: 100,
  transactional: true,
  // The tables, once per thread, on a connection of its own: `ctx.tx` exists only inside a call.
  async setup(ctx) {
    const connectionString = process.env.DATABASE_URL;
    if (connectionString === undefined || connectionString === '') throw new Error('DATABASE_URL is not set (the database of --idempotency)');
    const client = new pg.Client({ connectionString });
    await client.connect();
    try {
      await createTables(client, { changes: true });
    } finally {
      await client.end();
    }
    ctx.log.debug({ table }, 'tables ready');
  },
  async handleBatch(events, ctx) {
    // Every event once into the history: no guard, the transaction is the guard.
    await appendChanges(ctx.tx, events);
    // The sequence guard of the upsert stays for order only: an older event replayed from the dead
    // letters must not overwrite a newer state.
    await upsertNewest(ctx.tx, events);
  },
});
