import { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEvent, entryUpdatedData, runBatchHandler, sourceEntry } from 'durable-worker/testing';

// PGlite: PostgreSQL in WebAssembly, in this process. The test kit runs each call in a transaction
// on it, committed when every event is ok and rolled back otherwise, as the worker does on the
// database of --idempotency; no server is needed.
process.env.SYNC_TABLE = 'entries';
const { default: recordEntries } = await import('./transactional-handlers/record-entries.js');
const { createTables } = await import('./entries-table.js');

const entryEvent = (id: string, values: Parameters<typeof sourceEntry>[1], sequence: string) =>
  createTestEvent('source_entry.updated', entryUpdatedData({ sourceId: 'products', current: sourceEntry(id, values) }), { sequence, id: `event-${sequence}` });

describe('examples/sync-to-postgres: the transactional handler (PGlite)', () => {
  let db: PGlite;
  const changes = async () => (await db.query<{ event_id: string; entry_id: string }>('SELECT event_id, entry_id FROM entries_changes ORDER BY sequence')).rows;
  const entries = async () =>
    (
      await db.query<{ entry_id: string; sequence: string; properties: unknown }>(
        'SELECT entry_id, sequence::text AS sequence, properties FROM entries ORDER BY entry_id',
      )
    ).rows;

  beforeAll(async () => {
    db = new PGlite();
    await createTables(db, { changes: true });
  }, 60_000);
  afterAll(() => db.close());

  it('writes every event of a call into the history and the newest state of each entry, together', async () => {
    const events = [
      entryEvent('p-1', { name: 'Kettle' }, '10'),
      entryEvent('p-2', { name: 'Toaster' }, '11'),
      entryEvent('p-1', { name: 'Kettle', price: 18.5 }, '12'),
    ];
    // `resources` given: the setup (which creates the tables on DATABASE_URL) does not run.
    const outcome = await runBatchHandler(recordEntries, events, { database: db, resources: undefined });
    expect(outcome.events.map((e) => e.status)).toEqual(['ok', 'ok', 'ok']);
    expect(await changes()).toEqual([
      { event_id: 'event-10', entry_id: 'p-1' },
      { event_id: 'event-11', entry_id: 'p-2' },
      { event_id: 'event-12', entry_id: 'p-1' },
    ]);
    expect(await entries()).toEqual([
      { entry_id: 'p-1', sequence: '12', properties: { name: 'Kettle', price: 18.5 } },
      { entry_id: 'p-2', sequence: '11', properties: { name: 'Toaster' } },
    ]);
  });

  it('leaves nothing of a call whose transaction fails: the history rows go with the failed upsert', async () => {
    const before = await changes();
    // The history insert succeeds, then the upsert fails (its table is gone): the call rolls back whole.
    await db.query('ALTER TABLE entries RENAME TO entries_away');
    try {
      const outcome = await runBatchHandler(recordEntries, [entryEvent('p-3', { name: 'Teapot' }, '20'), entryEvent('p-4', { name: 'Mug' }, '21')], {
        database: db,
        resources: undefined,
      });
      expect(outcome.events.map((e) => e.status)).toEqual(['failed', 'failed']);
    } finally {
      await db.query('ALTER TABLE entries_away RENAME TO entries');
    }
    expect(await changes()).toEqual(before);
    expect((await entries()).map((row) => row.entry_id)).toEqual(['p-1', 'p-2']);
  });
});
