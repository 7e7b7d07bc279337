import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { createTestEvent, entryUpdatedData, runBatchHandler, sourceEntry, withEmulator } from 'durable-worker/testing';
import { underCi } from '../../test/fixtures/ci.js';

const HANDLERS = fileURLToPath(new URL('./handlers', import.meta.url));
const DATABASE_URL = process.env.DATABASE_URL;
const HOW = 'export DATABASE_URL=postgres://app:app@127.0.0.1:5432/app';

if (DATABASE_URL === undefined) {
  describe('examples/sync-to-postgres', () => {
    // In CI the database is part of the job: a missing URL is a broken job, not a reason to skip.
    if (underCi()) {
      it('needs DATABASE_URL in CI', () => {
        throw new Error(`DATABASE_URL is not set under CI: the PostgreSQL example must run in CI (${HOW})`);
      });
    } else {
      it.skip(`SKIPPED: DATABASE_URL is not set (${HOW} to run it)`, () => {});
    }
  });
} else {
  // A table of its own per run: parallel runs never see each other's rows.
  const table = `sync_example_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
  process.env.SYNC_TABLE = table;
  const db = new pg.Pool({ connectionString: DATABASE_URL, max: 2 });
  const { default: upsertEntries } = await import('./handlers/upsert-entries.js');

  const rows = async () =>
    (
      await db.query<{ entry_id: string; sequence: string; properties: Record<string, unknown> }>(
        `SELECT entry_id, sequence::text AS sequence, properties FROM ${table} ORDER BY entry_id`,
      )
    ).rows;
  const entryEvent = (id: string, values: Parameters<typeof sourceEntry>[1], sequence: string) =>
    createTestEvent('source_entry.updated', entryUpdatedData({ sourceId: 'products', current: sourceEntry(id, values) }), { sequence });

  afterAll(async () => {
    await db.query(`DROP TABLE IF EXISTS ${table}`);
    await db.end();
  });

  describe('examples/sync-to-postgres', () => {
    it('upserts every ingested entry through the real worker, newest values winning', async () => {
      await withEmulator({ handlers: HANDLERS }, async (env) => {
        await env.ingest('products', [
          {
            id: 'p-1',
            properties: [
              { id: 'name', value: 'Kettle' },
              { id: 'price', value: 20.5 },
            ],
          },
          { id: 'p-2', properties: [{ id: 'name', value: 'Toaster' }] },
        ]);
        await env.waitForSettled(2);
        await env.ingest('products', [{ id: 'p-1', properties: [{ id: 'price', value: 18.5 }] }]);
        const settled = await env.waitForSettled(3);
        expect(settled.map((o) => [o.handler, o.outcome])).toEqual([
          ['upsert-entries', 'ok'],
          ['upsert-entries', 'ok'],
          ['upsert-entries', 'ok'],
        ]);
        const last = settled[2]!.event;

        expect(await rows()).toEqual([
          { entry_id: 'p-1', sequence: last.sequence, properties: { name: 'Kettle', price: 18.5 } },
          { entry_id: 'p-2', sequence: expect.any(String), properties: { name: 'Toaster' } },
        ]);
      });
    });

    it('is idempotent by entry id and sequence: a redelivery or an older event changes nothing', async () => {
      const newer = entryEvent('p-9', { name: 'Teapot', price: 30 }, '9007199254740993');
      expect((await runBatchHandler(upsertEntries, [newer])).events.map((e) => e.status)).toEqual(['ok']);
      // The same event again (a batch that failed after its write) and an older one arriving late.
      const older = entryEvent('p-9', { name: 'Old teapot' }, '9007199254740992');
      const again = await runBatchHandler(upsertEntries, [newer, older], { attempt: 2 });
      expect(again.events.map((e) => e.status)).toEqual(['ok', 'ok']);

      const row = (await rows()).find((r) => r.entry_id === 'p-9');
      // Exact beyond 2^53: stored and compared as numeric, not as a JS number.
      expect(row).toEqual({ entry_id: 'p-9', sequence: '9007199254740993', properties: { name: 'Teapot', price: 30 } });
    });

    it('writes a batch in calls of at most maxBatchSize (100), each one statement', async () => {
      const events = Array.from({ length: 150 }, (_, i) => entryEvent(`bulk-${String(i).padStart(3, '0')}`, { n: i }, String(1_000 + i)));
      const outcome = await runBatchHandler(upsertEntries, events);
      expect(outcome.calls).toBe(2);
      expect(outcome.events.every((e) => e.status === 'ok')).toBe(true);
      expect((await rows()).filter((r) => r.entry_id.startsWith('bulk-'))).toHaveLength(150);
    });
  });
}
