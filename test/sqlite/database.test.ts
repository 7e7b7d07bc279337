import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { openSqlite, type SqliteDatabase, type SqliteDriverName } from '../../src/sqlite/index.js';

/**
 * The SqliteDatabase contract the stores are written against (idempotency, dead letters), on
 * node:sqlite.
 */
const dir = mkdtempSync(join(tmpdir(), 'dw-sqlite-driver-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the driver', () => {
  it('opens with node:sqlite, built into every supported Node', () => {
    const db = openSqlite(':memory:');
    try {
      expect(db.driver).toBe('node:sqlite');
    } finally {
      db.close();
    }
  });

  it('prints no warning, from the store nor from its checkpoint thread', () => {
    // node:sqlite prints an ExperimentalWarning when first loaded on Node 22 and early 24.x.
    const script = `
      const { SqliteIdempotencyStore } = await import(${JSON.stringify(resolve('src/idempotency/sqlite.ts'))});
      const store = await SqliteIdempotencyStore.open({ path: ${JSON.stringify(join(dir, 'warnings.sqlite'))}, prefix: 'p', doneTtlMs: 60000, checkpointEveryKeys: 10 });
      await store.markDone(Array.from({ length: 20 }, (_, i) => 'h:' + i));
      await store.markDone(['h:last']);
      await store.close();
      console.log('done');
    `;
    const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(child.status, child.stderr).toBe(0);
    expect(child.stdout.trim()).toBe('done');
    expect(child.stderr).toBe('');
  });
});

driverContract('node:sqlite');

function driverContract(driver: SqliteDriverName): void {
  describe(`SqliteDatabase on ${driver}`, () => {
    const open: SqliteDatabase[] = [];
    afterEach(() => {
      for (const db of open.splice(0)) db.close();
    });
    function connect(path = join(dir, `${randomUUID()}.sqlite`), options: { readOnly?: boolean; busyTimeoutMs?: number } = {}): SqliteDatabase {
      const db = openSqlite(path, { driver, ...options });
      open.push(db);
      return db;
    }
    function withTable(db: SqliteDatabase): SqliteDatabase {
      db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, data BLOB); CREATE INDEX t_name ON t (name);');
      return db;
    }

    it('runs statements and reads rows back with their values', () => {
      const db = withTable(connect());
      expect(db.driver).toBe(driver);
      const insert = db.prepare<[number, string | null, Uint8Array | null], never>('INSERT INTO t (id, name, data) VALUES (?, ?, ?)');
      expect(insert.run(1, 'one', null)).toMatchObject({ changes: 1, lastInsertRowid: 1 });
      insert.run(2, null, new Uint8Array([1, 2, 3]));
      insert.run(2 ** 53 - 1, 'big', null);
      const byId = db.prepare<[number], { id: number; name: string | null; data: Uint8Array | null }>('SELECT id, name, data FROM t WHERE id = ?');
      expect({ ...byId.get(1) }).toEqual({ id: 1, name: 'one', data: null });
      expect([...(byId.get(2)?.data ?? [])]).toEqual([1, 2, 3]);
      expect(byId.get(2 ** 53 - 1)?.id).toBe(2 ** 53 - 1);
      expect(byId.get(3)).toBeUndefined();
      const ids = db.prepare<[], { id: number }>('SELECT id FROM t ORDER BY id');
      expect(ids.all().map((row) => row.id)).toEqual([1, 2, 2 ** 53 - 1]);
      expect([...ids.iterate()].map((row) => row.id)).toEqual([1, 2, 2 ** 53 - 1]);
      expect(Number(db.prepare('DELETE FROM t WHERE id > ?').run(1).changes)).toBe(2);
    });

    it('keeps a text holding NUL whole when read as bytes (Node 22 reads TEXT only up to the first NUL)', () => {
      const db = withTable(connect());
      db.prepare('INSERT INTO t (id, name) VALUES (?, ?)').run(1, 'handler\u0000subject');
      const row = db.prepare<[], { name: Uint8Array }>('SELECT CAST(name AS BLOB) AS name FROM t').get()!;
      expect(Buffer.from(row.name).toString('utf8')).toBe('handler\u0000subject');
      expect(db.prepare<[string], { n: number }>('SELECT count(*) AS n FROM t WHERE name = ?').get('handler\u0000subject')!.n).toBe(1);
    });

    it('reads and sets pragmas: the first column, or undefined when there is none', () => {
      const db = connect();
      expect(db.pragma('journal_mode = WAL')).toBe('wal');
      expect(db.pragma('journal_mode')).toBe('wal');
      expect(db.pragma('synchronous = NORMAL')).toBeUndefined();
      expect(db.pragma('synchronous')).toBe(1);
      expect(connect(':memory:').pragma('journal_mode')).toBe('memory');
    });

    it('commits a transaction when its function returns, and rolls it back when it throws', () => {
      const db = withTable(connect());
      const insert = db.prepare<[number], never>('INSERT INTO t (id) VALUES (?)');
      const count = () => db.prepare<[], { n: number }>('SELECT count(*) AS n FROM t').get()?.n;
      const insertAll = db.transaction((ids: number[]) => {
        for (const id of ids) insert.run(id);
        return ids.length;
      }, 'immediate');
      expect(insertAll([1, 2])).toBe(2);
      expect(count()).toBe(2);
      // The third id collides: the whole call is undone, and the caller sees SQLite's error.
      expect(() => insertAll([3, 4, 1])).toThrow(/UNIQUE/);
      expect(count()).toBe(2);
      // The connection is usable afterwards (no transaction left open).
      expect(insertAll([5])).toBe(1);
      expect(count()).toBe(3);
    });

    it('runs a nested transaction in a savepoint: its failure undoes only its own writes', () => {
      const db = withTable(connect());
      const insert = db.prepare<[number], never>('INSERT INTO t (id) VALUES (?)');
      const inner = db.transaction((id: number) => {
        insert.run(id);
        throw new Error('inner fails');
      });
      const outer = db.transaction(() => {
        insert.run(1);
        expect(() => inner(2)).toThrow('inner fails');
        insert.run(3);
      }, 'immediate');
      outer();
      expect(
        db
          .prepare<[], { id: number }>('SELECT id FROM t ORDER BY id')
          .all()
          .map((row) => row.id),
      ).toEqual([1, 3]);
    });

    it('refuses a transaction function that returns a promise, and rolls it back', () => {
      const db = withTable(connect());
      const insert = db.prepare<[number], never>('INSERT INTO t (id) VALUES (?)');
      const asyncTx = db.transaction(async (id: number) => {
        insert.run(id);
      });
      expect(() => asyncTx(1)).toThrow(/must be synchronous/);
      expect(db.prepare<[], { n: number }>('SELECT count(*) AS n FROM t').get()?.n).toBe(0);
    });

    it('an immediate transaction holds the write lock from its start: another writer waits its busy timeout, a reader does not', () => {
      const path = join(dir, `${randomUUID()}.sqlite`);
      const first = withTable(connect(path));
      first.pragma('journal_mode = WAL');
      const second = connect(path, { busyTimeoutMs: 20 });
      const secondWrites = second.transaction(() => second.prepare('INSERT INTO t (id) VALUES (?)').run(2), 'immediate');
      const secondReads = second.transaction(() => second.prepare<[], { n: number }>('SELECT count(*) AS n FROM t').get()?.n);
      first.transaction(() => {
        expect(() => secondWrites()).toThrow(/locked|busy/i);
        expect(secondReads()).toBe(0); // WAL: readers go on while a writer holds the lock
      }, 'immediate')();
      expect(Number(secondWrites().changes)).toBe(1);
    });

    it('opens read-only: reads work, writes fail', () => {
      const path = join(dir, `${randomUUID()}.sqlite`);
      withTable(connect(path)).prepare('INSERT INTO t (id) VALUES (1)').run();
      const reader = connect(path, { readOnly: true });
      expect(reader.prepare<[], { n: number }>('SELECT count(*) AS n FROM t').get()?.n).toBe(1);
      expect(() => reader.prepare('INSERT INTO t (id) VALUES (2)').run()).toThrow(/readonly/i);
    });

    it('fails to open a read-only file that does not exist, and closes twice without harm', () => {
      expect(() => connect(join(dir, `${randomUUID()}.sqlite`), { readOnly: true })).toThrow();
      const db = connect();
      db.close();
      db.close();
      expect(() => db.prepare('SELECT 1')).toThrow();
    });
  });
}
