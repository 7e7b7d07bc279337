import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { RedisIdempotencyStore } from '../../src/idempotency/redis.js';
import { underCi } from '../fixtures/ci.js';
import { deferredContract, deferredRun } from './deferred-contract.js';

const REDIS_URL = process.env.REDIS_URL;

describe('redis deferred runs environment', () => {
  // CI must exercise the real adapter: a missing variable fails there instead of skipping quietly.
  it.runIf(underCi())('has REDIS_URL in CI', () => {
    expect(REDIS_URL, 'REDIS_URL must be set in CI (eval "$(bash .ci/services.sh)")').toBeTruthy();
  });
});

describe.skipIf(REDIS_URL === undefined)('redis deferred runs', () => {
  const url = REDIS_URL as string;
  deferredContract('redis', async (prefix) => {
    const store = await RedisIdempotencyStore.open({ url, prefix, doneTtlMs: 86_400_000 });
    return { store, deferred: store.deferred };
  });

  it("keeps a prefix's runs under its hash tag, and leaves no key behind once they are removed", async () => {
    const prefix = `test-${randomUUID()}`;
    const store = await RedisIdempotencyStore.open({ url, prefix, doneTtlMs: 86_400_000 });
    const { createClient } = await import('redis');
    const probe = createClient({ url });
    await probe.connect();
    try {
      const runs = [deferredRun('h', 's', '1'), deferredRun('h', 's', '2'), deferredRun('g', 't', '3')];
      await store.deferred.defer(runs, 'w');
      const keys = await probe.keys(`dw:defer:${prefix.length}:{${prefix}}:*`);
      expect(keys.length).toBe(8); // runs, chains, heads, handlers, two chains, two handlers
      expect(await probe.keys(`*${prefix}*`)).toEqual(expect.arrayContaining(keys));
      expect((await probe.keys(`*${prefix}*`)).every((key) => key.includes(`{${prefix}}`))).toBe(true);
      await store.deferred.remove(runs.map((run) => run.key));
      expect(await probe.keys(`*${prefix}*`)).toEqual([]);
    } finally {
      await probe.close();
      await store.close();
    }
  });

  it('reloads its scripts after the server forgot them (SCRIPT FLUSH)', async () => {
    const store = await RedisIdempotencyStore.open({ url, prefix: `test-${randomUUID()}`, doneTtlMs: 60_000 });
    const { createClient } = await import('redis');
    const probe = createClient({ url });
    await probe.connect();
    try {
      const run = deferredRun('h', 's', '1');
      await store.deferred.defer([run], 'w');
      await probe.scriptFlush();
      expect(await store.deferred.due(run.retryAtMs, 10)).toEqual([run]);
    } finally {
      await probe.close();
      await store.close();
    }
  });

  it('fails with DW_ERR_STORE once the store is closed', async () => {
    const store = await RedisIdempotencyStore.open({ url, prefix: `test-${randomUUID()}`, doneTtlMs: 1_000 });
    await store.close();
    await expect(store.deferred.defer([deferredRun('h', 's', '1')], 'w')).rejects.toMatchObject({ code: 'DW_ERR_STORE' });
    await expect(store.deferred.get('h:1')).rejects.toMatchObject({ code: 'DW_ERR_STORE' });
  });
});
