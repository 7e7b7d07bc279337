import { randomUUID } from 'node:crypto';
import { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  defineBatchHandler,
  defineHandler,
  ErrorCodes,
  PermanentError,
  type CloudEvent,
  type TransactionalContext,
  type TransactionClient,
} from '../../src/index.js';
import { createFakeClock, createTestEvent, runBatchHandler, runHandler, type TestDatabase } from '../../src/testing/index.js';
import { waitFor } from '../fixtures/wait-for.js';

/** A table of its own per test (dropped with the others in `made`): ids, read back in order. */
async function table(db: TestDatabase, made: string[]): Promise<{ name: string; ids(): Promise<string[]> }> {
  const name = `t_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
  await db.query(`CREATE TABLE ${name} (id text NOT NULL)`);
  made.push(name);
  return { name, ids: async () => ((await db.query(`SELECT id FROM ${name} ORDER BY id`)) as { rows: { id: string }[] }).rows.map((r) => r.id) };
}

const insert = (tx: TransactionClient, name: string, id: string) => tx.query(`INSERT INTO ${name} (id) VALUES ($1)`, [id]);
/** A transactional handler that writes the event's id into `name`, then does `then`. */
const recording = (name: string, then: (event: CloudEvent, ctx: TransactionalContext) => Promise<void>) =>
  defineHandler({
    type: 'job.run',
    transactional: true,
    async handle(event, ctx) {
      await insert(ctx.tx, name, event.id);
      await then(event, ctx);
    },
  });
const events = (count: number) => Array.from({ length: count }, (_, i) => createTestEvent('job.run', { n: i }, { id: `e${i}` }));

/** The kit's transactional runs on one database: PGlite here, a real server below. */
function transactionalKitSuite(name: string, open: () => Promise<{ db: TestDatabase; close(): Promise<void> }>) {
  describe(`transactional handlers in the test kit (${name})`, () => {
    let db: TestDatabase;
    let close: () => Promise<void>;
    const made: string[] = [];
    beforeAll(async () => {
      ({ db, close } = await open());
    }, 60_000);
    afterAll(async () => {
      for (const name of made) await db.query(`DROP TABLE IF EXISTS ${name}`);
      await close();
    });

    it('commits what ctx.tx wrote when the handler resolves, and rolls it back when it throws', async () => {
      const t = await table(db, made);
      const handler = recording(t.name, async (event, ctx) => {
        const { rows } = await ctx.tx.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${t.name}`);
        if ((event.data as { n: number }).n === 1) throw new Error(`rolled back with ${rows[0]?.n} rows written`);
      });
      const [ok, failing] = events(2);
      expect(await runHandler(handler, ok!, { database: db })).toMatchObject({ status: 'ok' });
      // The failing run saw its own row, and the committed one, inside its transaction.
      expect(await runHandler(handler, failing!, { database: db })).toMatchObject({ status: 'failed', error: { message: 'rolled back with 2 rows written' } });
      expect(await t.ids()).toEqual(['e0']);
    });

    it('rolls back a dead-lettered event, and a run cut off at the deadline (fake clock)', async () => {
      const t = await table(db, made);
      const permanent = recording(t.name, async () => {
        throw new PermanentError('never');
      });
      expect(await runHandler(permanent, events(1)[0]!, { database: db })).toMatchObject({ status: 'dead_lettered', reason: 'permanent' });

      let late: Promise<unknown> | undefined;
      let inserted = false;
      const hanging = recording(t.name, async (_event, ctx) => {
        inserted = true;
        await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
        // A handler that goes on after its deadline: its transaction is gone.
        late = ctx.tx.query('SELECT 1');
        late.catch(() => {});
      });
      const clock = createFakeClock();
      const running = runHandler(hanging, events(2)[1]!, { database: db, clock, leaseMs: 1_000 });
      await waitFor('the handler to write its row', () => inserted);
      await clock.advance(1_000);
      expect(await running).toMatchObject({ status: 'failed', error: { code: ErrorCodes.HANDLER_TIMEOUT } });
      const { query } = await waitFor('the handler to query after its deadline', () => late !== undefined && { query: late });
      await expect(query).rejects.toMatchObject({ code: ErrorCodes.TRANSACTION, message: expect.stringContaining('aborted') });
      expect(await t.ids()).toEqual([]);
    });

    it('refuses a transactional handler without options.database, and one that ends the transaction itself', async () => {
      const handler = defineHandler({
        type: 'job.run',
        transactional: true,
        async handle(_event, ctx) {
          await ctx.tx.query('COMMIT');
        },
      });
      expect(() => runHandler(handler, events(1)[0]!)).toThrow(/runHandler: this handler is transactional: give options.database/);
      expect(await runHandler(handler, events(1)[0]!, { database: db })).toMatchObject({ status: 'failed', error: { code: ErrorCodes.TRANSACTION } });
    });

    it('batch: one transaction per call; a failed event rolls back its whole call, its ok events run again uncounted', async () => {
      const t = await table(db, made);
      const handler = defineBatchHandler({
        type: 'job.run',
        transactional: true,
        maxBatchSize: 2,
        async handleBatch(batch, ctx) {
          await ctx.tx.query(`INSERT INTO ${t.name} (id) SELECT unnest($1::text[])`, [batch.map((e) => e.id)]);
          return batch.map((e) => ((e.data as { n: number }).n === 3 ? new Error('e3 failed') : undefined));
        },
      });
      // Calls [e0, e1] and [e2, e3]: the first commits; the second rolls back, e2 with it.
      const outcome = await runBatchHandler(handler, events(4), { database: db, attempt: 5, maxAttempts: 5 });
      expect(outcome.calls).toBe(2);
      expect(outcome.events).toEqual([
        { status: 'ok' },
        { status: 'ok' },
        // On the last attempt, yet not dead-lettered: this run of e2 does not count.
        { status: 'failed', error: expect.objectContaining({ code: ErrorCodes.ROLLED_BACK }) },
        { status: 'dead_lettered', reason: 'max-attempts', error: expect.objectContaining({ message: 'e3 failed' }) },
      ]);
      expect(await t.ids()).toEqual(['e0', 'e1']);
    });

    it('takes queries as a config object too, and answers in pg result shape', async () => {
      let seen: unknown;
      const handler = defineHandler({
        type: 'job.run',
        transactional: true,
        async handle(_event, ctx) {
          const result = await ctx.tx.query({ text: 'SELECT $1::text AS word', values: ['hello'] });
          seen = { command: result.command, rowCount: result.rowCount, rows: result.rows, field: result.fields[0]?.name };
        },
      });
      expect(await runHandler(handler, events(1)[0]!, { database: db })).toMatchObject({ status: 'ok' });
      expect(seen).toEqual({ command: 'SELECT', rowCount: 1, rows: [{ word: 'hello' }], field: 'word' });
    });
  });
}

transactionalKitSuite('PGlite', async () => {
  const db = new PGlite();
  await db.waitReady;
  return { db, close: () => db.close() };
});

const DATABASE_URL = process.env.DATABASE_URL;
if (DATABASE_URL === undefined) {
  describe('transactional handlers in the test kit (pg Pool)', () => {
    it.skip('SKIPPED: DATABASE_URL is not set', () => {});
  });
} else {
  transactionalKitSuite('pg Pool', async () => {
    const pg = (await import('pg')).default;
    const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 2 });
    return { db: pool, close: () => pool.end() };
  });
}
