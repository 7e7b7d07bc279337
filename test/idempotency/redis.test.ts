import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createIdempotencyStore } from '../../src/idempotency/index.js';
import { RedisIdempotencyStore } from '../../src/idempotency/redis.js';
import { underCi } from '../fixtures/ci.js';
import { storeContract } from './contract.js';
import { freePort, privateRedisUnavailable, startPrivateRedis } from './private-servers.js';

const REDIS_URL = process.env.REDIS_URL;

describe('redis store environment', () => {
  // CI must exercise the real adapter: a missing variable fails there instead of skipping quietly.
  it.runIf(underCi())('has REDIS_URL in CI', () => {
    expect(REDIS_URL, 'REDIS_URL must be set in CI (eval "$(bash .ci/services.sh)")').toBeTruthy();
  });
  if (REDIS_URL === undefined) console.warn('[idempotency] redis suites skipped: REDIS_URL is not set');
});

describe.skipIf(REDIS_URL === undefined)('redis store', () => {
  const url = REDIS_URL as string;
  const unavailable = privateRedisUnavailable();
  // Under CI the restart test runs whatever is installed: a missing server binary fails it.
  const runRestart = unavailable === undefined || underCi();
  if (!runRestart) console.warn(`[idempotency] redis restart test skipped: ${unavailable}`);
  storeContract('redis', (options) => createIdempotencyStore(url, options), {
    shared: true,
    ...(runRestart ? { privateServer: () => startPrivateRedis((serverUrl) => (options) => createIdempotencyStore(serverUrl, options)) } : {}),
  });

  it('fails to open with DW_ERR_STORE, without the password, when nothing listens', async () => {
    const port = await freePort();
    const failure = await createIdempotencyStore(`redis://:s3cret@127.0.0.1:${port}`, { prefix: 'p', doneTtlMs: 1_000 }).then(
      () => undefined,
      (err: unknown) => err as Error & { code?: string },
    );
    expect(failure?.code).toBe('DW_ERR_STORE');
    expect(failure?.message).toContain(`127.0.0.1:${port}`);
    expect(failure?.message).not.toContain('s3cret');
  });

  it('keeps done marks with the done TTL and claims with the claim TTL, under its own key space', async () => {
    const prefix = `test-${randomUUID()}`;
    const store = await RedisIdempotencyStore.open({ url, prefix, doneTtlMs: 3_600_000 });
    const { createClient } = await import('redis');
    const probe = createClient({ url });
    await probe.connect();
    try {
      await store.claim(['h:claimed'], 'worker-a', 30_000);
      await store.markDone(['h:done']);
      const claimKey = `dw:idem:${prefix.length}:{${prefix}}:h:claimed`;
      const doneKey = `dw:idem:${prefix.length}:{${prefix}}:h:done`;
      expect(await probe.get(claimKey)).toBe('c:worker-a');
      expect(await probe.get(doneKey)).toBe('d');
      expect(await probe.pTTL(claimKey)).toBeGreaterThan(25_000);
      expect(await probe.pTTL(claimKey)).toBeLessThanOrEqual(30_000);
      expect(await probe.pTTL(doneKey)).toBeGreaterThan(3_500_000);
    } finally {
      await probe.close();
      await store.close();
    }
  });

  it('keeps failure histories in one hash per prefix, with the done TTL, and a done mark deletes its field', async () => {
    const prefix = `test-${randomUUID()}`;
    const store = await RedisIdempotencyStore.open({ url, prefix, doneTtlMs: 3_600_000 });
    const { createClient } = await import('redis');
    const probe = createClient({ url });
    await probe.connect();
    try {
      await store.claim(['h:failing', 'h:other'], 'worker-a', 30_000);
      const historiesKey = `dw:fail:${prefix.length}:{${prefix}}`;
      expect(await probe.exists(historiesKey)).toBe(0); // nothing failed yet: no hash at all
      const before = Date.now();
      expect(await store.recordFailures([{ key: 'h:failing', failedAtMs: 1_000, retryAtMs: 3_000 }], 'worker-a')).toEqual([1]);
      const claimKey = `dw:idem:${prefix.length}:{${prefix}}:h:failing`;
      expect(await probe.get(claimKey)).toBeNull(); // the owner's claim went with the failure
      const stored = await probe.hGet(historiesKey, claimKey);
      const [history, expiresAtMs] = [stored?.slice(0, stored.lastIndexOf(':')), Number(stored?.slice(stored.lastIndexOf(':') + 1))];
      expect(history).toBe('1:3000:1000:1000');
      expect(expiresAtMs).toBeGreaterThanOrEqual(before + 3_600_000 - 1_000);
      expect(await probe.pTTL(historiesKey)).toBeGreaterThan(3_500_000);
      await store.markDone(['h:failing']);
      expect(await probe.hExists(historiesKey, claimKey)).toBe(0);
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
      await store.claim(['h:1'], 'a', 1_000);
      await probe.scriptFlush();
      expect((await store.claim(['h:1', 'h:2'], 'b', 1_000)).states).toEqual(['busy', 'new']);
    } finally {
      await probe.close();
      await store.close();
    }
  });
});
