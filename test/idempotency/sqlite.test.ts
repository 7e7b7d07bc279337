import { randomUUID } from 'node:crypto';
import { closeSync, existsSync, mkdtempSync, openSync, readSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createIdempotencyStore } from '../../src/idempotency/index.js';
import { SqliteIdempotencyStore } from '../../src/idempotency/sqlite.js';
import { openSqlite, type SqliteDriverName } from '../../src/sqlite/index.js';
import { waitFor } from '../fixtures/wait-for.js';
import { storeContract } from './contract.js';

const dir = mkdtempSync(join(tmpdir(), 'dw-sqlite-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The checkpoint sequence number in the WAL's header: it changes each time the WAL starts over (SQLite file format, "WAL File Format"). */
function walSequence(path: string): number {
  const fd = openSync(`${path}-wal`, 'r');
  try {
    const field = Buffer.alloc(4);
    readSync(fd, field, 0, 4, 12);
    return field.readUInt32BE(0);
  } finally {
    closeSync(fd);
  }
}

// Two instances on one file are two connections: the race test runs across them.
storeContract('sqlite', (options) => createIdempotencyStore(`sqlite:${join(dir, 'nested', 'folder', 'idempotency.sqlite')}`, options), { shared: true });

/** The store on node:sqlite. */
sqliteStoreSuite('node:sqlite');

function sqliteStoreSuite(driver: SqliteDriverName): void {
  storeContract(`sqlite (${driver})`, (options) => SqliteIdempotencyStore.open({ ...options, path: join(dir, driver, 'idempotency.sqlite'), driver }), {
    shared: true,
  });

  describe(`sqlite store (${driver})`, () => {
    const stores: SqliteIdempotencyStore[] = [];
    afterEach(async () => {
      await Promise.all(stores.splice(0).map((store) => store.close()));
    });
    async function open(options: Partial<Parameters<typeof SqliteIdempotencyStore.open>[0]> = {}) {
      const store = await SqliteIdempotencyStore.open({
        driver,
        path: join(dir, `${randomUUID()}.sqlite`),
        prefix: 'p',
        doneTtlMs: 60_000,
        ...options,
      });
      stores.push(store);
      return store;
    }

    it('creates the parent folder and uses WAL', async () => {
      const path = join(dir, randomUUID(), 'deeper', 'store.sqlite');
      const store = await open({ path });
      await store.markDone(['h:1']);
      expect(existsSync(path)).toBe(true);
      const peek = openSqlite(path, { readOnly: true, driver });
      try {
        expect(peek.pragma('journal_mode')).toBe('wal');
        expect(peek.prepare('SELECT count(*) AS n FROM durable_worker_done WHERE key = ?').get('h:1')?.n).toBe(1);
      } finally {
        peek.close();
      }
    });

    it('commits done marks of calls made together in one transaction and settles each caller after it', async () => {
      const path = join(dir, `${randomUUID()}.sqlite`);
      const store = await open({ path, groupCommitWindowMs: 50 });
      const peek = openSqlite(path, { readOnly: true, driver });
      try {
        const count = () => peek.prepare('SELECT count(*) AS n FROM durable_worker_done').get()?.n;
        const settled: string[] = [];
        const first = store.markDone(['h:1', 'h:2']).then(() => settled.push('first'));
        const second = store.markDone(['h:3']).then(() => settled.push('second'));
        // Nothing is written before the group commits...
        expect(count()).toBe(0);
        await Promise.all([first, second]);
        // ...then both calls' keys are there, and both callers were settled by the same commit.
        expect(count()).toBe(3);
        expect(settled.sort()).toEqual(['first', 'second']);
      } finally {
        peek.close();
      }
    });

    it('commits a group at once when it reaches the size limit, without waiting for the window', async () => {
      const store = await open({ groupCommitWindowMs: 60_000, groupCommitMaxKeys: 3 });
      // A 60 s window: this resolves only because the third key triggers the commit.
      await store.markDone(['h:1', 'h:2', 'h:3']);
      expect((await store.claim(['h:1', 'h:3'], 'a', 1_000)).states).toEqual(['done', 'done']);
    });

    it('commits a pending group at once when a caller flushes it (a batch about to ack)', async () => {
      const store = await open({ groupCommitWindowMs: 60_000 });
      const marked = store.markDone(['h:1']);
      store.flush();
      // A 60 s window: this resolves only because of the flush.
      await marked;
      expect((await store.claim(['h:1'], 'a', 1_000)).states).toEqual(['done']);
    });

    it('commits pending done marks before a claim reads them', async () => {
      const store = await open({ groupCommitWindowMs: 60_000 });
      const marked = store.markDone(['h:1']);
      expect((await store.claim(['h:1'], 'a', 1_000)).states).toEqual(['done']);
      await marked;
    });

    it('flushes pending done marks on close', async () => {
      const path = join(dir, `${randomUUID()}.sqlite`);
      const store = await open({ path, groupCommitWindowMs: 60_000 });
      const marked = store.markDone(['h:1']);
      await store.close();
      await marked;
      const reopened = await open({ path });
      expect((await reopened.claim(['h:1'], 'a', 1_000)).states).toEqual(['done']);
    });

    it('deletes expired claims and done marks, and only those', async () => {
      let nowMs = 1_000_000;
      const store = await open({ doneTtlMs: 10_000, now: () => nowMs });
      await store.claim(['h:claim'], 'a', 1_000);
      await store.markDone(['h:done']);
      await store.claim(['h:live'], 'a', 60_000);
      nowMs += 10_000;
      expect(store.deleteExpired()).toBe(2);
      expect((await store.claim(['h:live'], 'b', 1_000)).states).toEqual(['busy']);
    });

    it('deletes more expired rows than one sweep holds over a few sweeps, after which the keys are new again', async () => {
      let nowMs = 1_000_000;
      const store = await open({ doneTtlMs: 10_000, now: () => nowMs });
      const keys = Array.from({ length: 2_500 }, (_, i) => `h:${i}`);
      await store.markDone(keys);
      nowMs += 10_000;
      const sweeps: number[] = [];
      for (let deleted = store.deleteExpired(); deleted > 0; deleted = store.deleteExpired()) sweeps.push(deleted);
      expect(sweeps.reduce((a, b) => a + b, 0)).toBe(keys.length);
      // docs/stores.md: one sweep deletes at most 1,000 done marks, so it holds the event loop briefly.
      expect(Math.max(...sweeps)).toBeLessThanOrEqual(1_000);
      expect((await store.claim(['h:0', 'h:2499'], 'a', 1_000)).states).toEqual(['new', 'new']);
    });

    it('sweeps more expired rows than one sweep holds on its own timer', async () => {
      const path = join(dir, `${randomUUID()}.sqlite`);
      let nowMs = 1_000_000;
      const store = await open({ path, doneTtlMs: 1_000, cleanupIntervalMs: 20, now: () => nowMs });
      await store.markDone(Array.from({ length: 2_500 }, (_, i) => `h:${i}`));
      const peek = openSqlite(path, { readOnly: true, driver });
      try {
        const count = () => peek.prepare('SELECT count(*) AS n FROM durable_worker_done').get()?.n;
        expect(count()).toBe(2_500);
        nowMs += 1_000;
        await waitFor('the periodic sweeps', async () => count() === 0, 5_000);
      } finally {
        peek.close();
      }
    });

    it('sweeps expired rows on its own timer', async () => {
      const path = join(dir, `${randomUUID()}.sqlite`);
      let nowMs = 1_000_000;
      const store = await open({ path, doneTtlMs: 1_000, cleanupIntervalMs: 20, now: () => nowMs });
      await store.markDone(['h:1', 'h:2']);
      const peek = openSqlite(path, { readOnly: true, driver });
      try {
        const count = () => peek.prepare('SELECT count(*) AS n FROM durable_worker_done').get()?.n;
        expect(count()).toBe(2);
        nowMs += 1_000;
        await waitFor('the periodic sweep', async () => count() === 0, 5_000);
      } finally {
        peek.close();
      }
    });

    it('checkpoints the WAL on a background thread once enough keys were written', async () => {
      const path = join(dir, `${randomUUID()}.sqlite`);
      const errors: Error[] = [];
      const store = await open({ path, checkpointEveryKeys: 200, onBackgroundError: (err) => errors.push(err) });
      // Until a checkpoint copies them, committed pages live in the WAL only: the file does not grow.
      const sizeBefore = statSync(path).size;
      for (let batch = 0; batch < 5; batch++) {
        const keys = Array.from({ length: 100 }, () => `h:${randomUUID()}`);
        await store.claim(keys, 'a', 60_000);
        await store.markDone(keys);
      }
      await waitFor('a checkpoint to copy pages into the file', async () => statSync(path).size > sizeBefore, 5_000);
      expect(errors).toEqual([]);
    });

    it('keeps answering right while background checkpoints run, and the WAL starts over instead of growing', async () => {
      const path = join(dir, `${randomUUID()}.sqlite`);
      const errors: Error[] = [];
      const store = await open({ path, checkpointEveryKeys: 100, onBackgroundError: (err) => errors.push(err) });
      const other = await open({ path }); // a second connection writing to the same file meanwhile
      const batches = Array.from({ length: 60 }, () => Array.from({ length: 100 }, () => `h:${randomUUID()}`));
      let walPeakBytes = 0;
      for (const [i, keys] of batches.entries()) {
        expect((await store.claim(keys, 'a', 60_000)).states).toEqual(keys.map(() => 'new'));
        await Promise.all(keys.map((key) => store.markDone([key])));
        expect((await other.claim(keys, 'b', 60_000)).states).toEqual(keys.map(() => 'done'));
        walPeakBytes = Math.max(walPeakBytes, statSync(`${path}-wal`).size);
        if (i % 10 === 9) {
          // Every 10 batches, the WAL must start over: once a background checkpoint has copied it all,
          // the next write rewrites it from its beginning (however slowly this machine runs the thread).
          const before = walSequence(path);
          await waitFor(
            'the WAL to start over',
            async () => {
              await store.markDone([`h:${randomUUID()}`]);
              return walSequence(path) !== before;
            },
            10_000,
          );
        }
      }
      // Without background checkpoints this run leaves a WAL of ~12 MiB (checkpointEveryKeys: 0).
      expect(walPeakBytes).toBeLessThan(4 * 1024 * 1024);
      expect(errors).toEqual([]);
    });

    it('migrates a schema-1 file: live claims and done marks carry over, and an older version can no longer open it', async () => {
      const path = join(dir, `${randomUUID()}.sqlite`);
      const nowMs = Date.now();
      const legacySchema = `
        CREATE TABLE IF NOT EXISTS durable_worker_idempotency (
          prefix TEXT NOT NULL, key TEXT NOT NULL, state TEXT NOT NULL CHECK (state IN ('claimed', 'done')),
          owner TEXT, expires_at INTEGER NOT NULL, PRIMARY KEY (prefix, key)
        ) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS durable_worker_idempotency_expires_at ON durable_worker_idempotency (expires_at);`;
      const legacy = openSqlite(path, { driver });
      try {
        legacy.pragma('journal_mode = WAL');
        legacy.exec(legacySchema);
        const insert = legacy.prepare('INSERT INTO durable_worker_idempotency VALUES (?, ?, ?, ?, ?)');
        insert.run('p', 'h:done', 'done', null, nowMs + 60_000);
        insert.run('p', 'h:claimed', 'claimed', 'a', nowMs + 60_000);
        insert.run('p', 'h:expired', 'done', null, nowMs - 1);
        insert.run('other', 'h:done', 'done', null, nowMs + 60_000);
      } finally {
        legacy.close();
      }

      const store = await open({ path });
      expect((await store.claim(['h:done', 'h:claimed', 'h:expired'], 'b', 1_000)).states).toEqual(['done', 'busy', 'new']);
      const other = await open({ path, prefix: 'other' });
      expect((await other.claim(['h:done', 'h:claimed'], 'b', 1_000)).states).toEqual(['done', 'new']);
      // Opening again finds nothing left to migrate.
      const again = await open({ path });
      expect((await again.claim(['h:done'], 'b', 1_000)).states).toEqual(['done']);

      const peek = openSqlite(path, { driver });
      try {
        // The old name is now a read-only view in the old shape...
        expect(peek.prepare('SELECT state FROM durable_worker_idempotency WHERE prefix = ? AND key = ?').get('p', 'h:done')?.state).toBe('done');
        // ...on which an older version's schema fails, so it stops at start instead of ignoring the marks.
        expect(() => peek.exec(legacySchema)).toThrow(/view/);
      } finally {
        peek.close();
      }
    });

    it('reports an unusable path as DW_ERR_STORE', async () => {
      const blocker = join(dir, `${randomUUID()}.file`);
      await open({ path: blocker }); // a file where the next store wants a folder
      await expect(SqliteIdempotencyStore.open({ driver, path: join(blocker, 'x.sqlite'), prefix: 'p', doneTtlMs: 1 })).rejects.toMatchObject({
        code: 'DW_ERR_STORE',
      });
    });
  });
}
