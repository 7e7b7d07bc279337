import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteIdempotencyStore } from '../../src/idempotency/sqlite.js';
import { deferredContract, deferredRun } from './deferred-contract.js';

const dir = mkdtempSync(join(tmpdir(), 'dw-deferred-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// One file for every test: prefixes keep them apart, as they keep workers sharing a file.
const path = join(dir, 'idempotency.sqlite');
deferredContract('sqlite', async (prefix) => {
  const store = await SqliteIdempotencyStore.open({ path, prefix, doneTtlMs: 86_400_000 });
  return { store, deferred: store.deferred };
});

describe('sqlite deferred runs', () => {
  it('survive the store closing and opening again, and see a done mark still held back', async () => {
    const file = join(dir, 'reopen.sqlite');
    const run = deferredRun('h', 's', '1');
    const done = deferredRun('h', 's', '2');
    const first = await SqliteIdempotencyStore.open({ path: file, prefix: 'p', doneTtlMs: 86_400_000, groupCommitWindowMs: 60_000 });
    void first.markDone([done.key]); // waits in the group for a minute: defer must commit it first
    await first.deferred.defer([run, done], 'w');
    await first.close();
    const second = await SqliteIdempotencyStore.open({ path: file, prefix: 'p', doneTtlMs: 86_400_000 });
    try {
      expect(await second.deferred.list({ limit: 10 })).toEqual([run]);
      expect((await second.claim([done.key], 'w', 1_000)).states).toEqual(['done']);
    } finally {
      await second.close();
    }
  });

  it('fails with DW_ERR_STORE once the store is closed', async () => {
    const store = await SqliteIdempotencyStore.open({ path: ':memory:', prefix: 'p', doneTtlMs: 1_000 });
    await store.close();
    await expect(store.deferred.defer([deferredRun('h', 's', '1')], 'w')).rejects.toMatchObject({ code: 'DW_ERR_STORE' });
    await expect(store.deferred.list({ limit: 1 })).rejects.toMatchObject({ code: 'DW_ERR_STORE' });
  });
});
