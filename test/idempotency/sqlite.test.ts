import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createIdempotencyStore } from '../../src/idempotency/index.js';
import { SqliteIdempotencyStore } from '../../src/idempotency/sqlite.js';
import { eventually, storeContract } from './contract.js';

const dir = mkdtempSync(join(tmpdir(), 'dw-sqlite-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const sharedFile = join(dir, 'nested', 'folder', 'idempotency.sqlite');

// Two instances on one file are two connections: the race test runs across them.
storeContract('sqlite', (options) => createIdempotencyStore(`sqlite:${sharedFile}`, options), { shared: true });

describe('sqlite store', () => {
  const stores: SqliteIdempotencyStore[] = [];
  afterEach(async () => {
    await Promise.all(stores.splice(0).map((store) => store.close()));
  });
  async function open(options: Partial<Parameters<typeof SqliteIdempotencyStore.open>[0]> = {}) {
    const store = await SqliteIdempotencyStore.open({
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
    const peek = new Database(path, { readonly: true });
    try {
      expect(peek.pragma('journal_mode', { simple: true })).toBe('wal');
      expect(peek.prepare('SELECT state FROM durable_worker_idempotency WHERE key = ?').pluck().get('h:1')).toBe('done');
    } finally {
      peek.close();
    }
  });

  it('commits done marks of calls made together in one transaction and settles each caller after it', async () => {
    const path = join(dir, `${randomUUID()}.sqlite`);
    const store = await open({ path, groupCommitWindowMs: 50 });
    const peek = new Database(path, { readonly: true });
    try {
      const count = () => peek.prepare("SELECT count(*) FROM durable_worker_idempotency WHERE state = 'done'").pluck().get();
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
    expect(await store.claim(['h:1', 'h:3'], 'a', 1_000)).toEqual(['done', 'done']);
  });

  it('commits pending done marks before a claim reads them', async () => {
    const store = await open({ groupCommitWindowMs: 60_000 });
    const marked = store.markDone(['h:1']);
    expect(await store.claim(['h:1'], 'a', 1_000)).toEqual(['done']);
    await marked;
  });

  it('flushes pending done marks on close', async () => {
    const path = join(dir, `${randomUUID()}.sqlite`);
    const store = await open({ path, groupCommitWindowMs: 60_000 });
    const marked = store.markDone(['h:1']);
    await store.close();
    await marked;
    const reopened = await open({ path });
    expect(await reopened.claim(['h:1'], 'a', 1_000)).toEqual(['done']);
  });

  it('deletes expired claims and done marks, and only those', async () => {
    let nowMs = 1_000_000;
    const store = await open({ doneTtlMs: 10_000, now: () => nowMs });
    await store.claim(['h:claim'], 'a', 1_000);
    await store.markDone(['h:done']);
    await store.claim(['h:live'], 'a', 60_000);
    nowMs += 10_000;
    expect(store.deleteExpired()).toBe(2);
    expect(await store.claim(['h:live'], 'b', 1_000)).toEqual(['busy']);
  });

  it('sweeps expired rows on its own timer', async () => {
    const path = join(dir, `${randomUUID()}.sqlite`);
    let nowMs = 1_000_000;
    const store = await open({ path, doneTtlMs: 1_000, cleanupIntervalMs: 20, now: () => nowMs });
    await store.markDone(['h:1', 'h:2']);
    const peek = new Database(path, { readonly: true });
    try {
      const count = () => peek.prepare('SELECT count(*) FROM durable_worker_idempotency').pluck().get() as number;
      expect(count()).toBe(2);
      nowMs += 1_000;
      await eventually(async () => count() === 0, 5_000, 'the periodic sweep');
    } finally {
      peek.close();
    }
  });

  it('reports an unusable path as DW_ERR_STORE', async () => {
    const blocker = join(dir, `${randomUUID()}.file`);
    await open({ path: blocker }); // a file where the next store wants a folder
    await expect(SqliteIdempotencyStore.open({ path: join(blocker, 'x.sqlite'), prefix: 'p', doneTtlMs: 1 })).rejects.toMatchObject({
      code: 'DW_ERR_STORE',
    });
  });
});
