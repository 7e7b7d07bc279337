import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteIdempotencyStore } from '../../src/idempotency/sqlite.js';
import { openSqlite } from '../../src/sqlite/index.js';

const dir = mkdtempSync(join(tmpdir(), 'dw-sqlite-failures-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const T0 = Date.parse('2026-11-28T00:00:00Z');

describe('sqlite store: failure histories', () => {
  it('adds its failures table to a file written before it, keeping the claims and done marks', async () => {
    const path = join(dir, 'schema-2.sqlite');
    const before = await SqliteIdempotencyStore.open({ path, prefix: 'p', doneTtlMs: 86_400_000 });
    await before.claim(['h:claimed'], 'worker-a', 60_000);
    await before.markDone(['h:done']);
    await before.close();
    // The file as a version without failure histories left it.
    const db = openSqlite(path);
    db.exec('DROP TABLE durable_worker_failures');
    db.close();

    const store = await SqliteIdempotencyStore.open({ path, prefix: 'p', doneTtlMs: 86_400_000 });
    try {
      expect(await store.claim(['h:done', 'h:claimed', 'h:new'], 'worker-b', 60_000)).toEqual({ states: ['done', 'busy', 'new'], failures: undefined });
      expect(await store.recordFailures([{ key: 'h:claimed', failedAtMs: T0, retryAtMs: T0 }], 'worker-a')).toEqual([1]);
      expect((await store.claim(['h:claimed'], 'worker-b', 60_000)).failures).toEqual([
        { failures: 1, retryAtMs: T0, firstFailedAtMs: T0, lastFailedAtMs: T0 },
      ]);
    } finally {
      await store.close();
    }
  });

  it('a failure recorded right after a done mark still waiting for its group commit leaves the key done', async () => {
    const store = await SqliteIdempotencyStore.open({ path: join(dir, 'group.sqlite'), prefix: 'p', doneTtlMs: 86_400_000, groupCommitWindowMs: 60_000 });
    try {
      await store.claim(['h:1'], 'worker-a', 60_000);
      const marked = store.markDone(['h:1']);
      expect(await store.recordFailures([{ key: 'h:1', failedAtMs: T0, retryAtMs: T0 }], 'worker-a')).toEqual([0]);
      await marked;
      expect(await store.claim(['h:1'], 'worker-b', 60_000)).toEqual({ states: ['done'], failures: undefined });
    } finally {
      await store.close();
    }
  });

  it('the sweep deletes failure histories past the done TTL, and only those', async () => {
    let nowMs = T0;
    const store = await SqliteIdempotencyStore.open({ path: join(dir, 'sweep.sqlite'), prefix: 'p', doneTtlMs: 10_000, now: () => nowMs });
    try {
      await store.recordFailures([{ key: 'h:old', failedAtMs: nowMs, retryAtMs: nowMs }], 'worker-a');
      nowMs += 5_000;
      await store.recordFailures([{ key: 'h:recent', failedAtMs: nowMs, retryAtMs: nowMs }], 'worker-a');
      nowMs += 5_000;
      expect(store.deleteExpired()).toBe(1);
      const { failures } = await store.claim(['h:old', 'h:recent'], 'worker-b', 1_000);
      expect(failures?.[0]).toBeUndefined();
      expect(failures?.[1]?.failures).toBe(1);
    } finally {
      await store.close();
    }
  });
});
