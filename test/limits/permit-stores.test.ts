import { describe, expect, it } from 'vitest';
import { MemoryPermits } from '../../src/idempotency/memory-permits.js';
import { PostgresIdempotencyStore } from '../../src/idempotency/postgres.js';
import { RedisIdempotencyStore } from '../../src/idempotency/redis.js';
import { underCi } from '../fixtures/ci.js';
import { permitContract } from './permit-contract.js';

const REDIS_URL = process.env.REDIS_URL;
const DATABASE_URL = process.env.DATABASE_URL;

describe('permit stores environment', () => {
  // CI must exercise the real adapters: a missing variable fails there instead of skipping quietly.
  it.runIf(underCi())('has REDIS_URL and DATABASE_URL in CI', () => {
    expect(REDIS_URL).toBeTruthy();
    expect(DATABASE_URL).toBeTruthy();
  });
});

// One process: every "process" of a prefix is the same object (the memory and SQLite stores).
const memory = new Map<string, MemoryPermits>();
permitContract('memory', async (prefix) => {
  if (!memory.has(prefix)) memory.set(prefix, new MemoryPermits());
  return { permits: memory.get(prefix) as MemoryPermits, close: async () => {} };
});

describe.skipIf(REDIS_URL === undefined)('redis', () => {
  permitContract('redis', async (prefix) => {
    const store = await RedisIdempotencyStore.open({ url: REDIS_URL as string, prefix, doneTtlMs: 60_000 });
    return { permits: store.permits, close: () => store.close() };
  });
});

describe.skipIf(DATABASE_URL === undefined)('postgres', () => {
  permitContract('postgres', async (prefix) => {
    const store = await PostgresIdempotencyStore.open({ url: DATABASE_URL as string, prefix, doneTtlMs: 60_000, poolSize: 4 });
    return { permits: store.permits, close: () => store.close() };
  });
});
