/**
 * The one contract every idempotency store adapter passes (undici's `cacheStoreTests(Store)`
 * style): memory, SQLite, Redis and PostgreSQL run the same claims. It is the contract the package
 * ships to stores of users' own (`idempotencyStoreContract` of durable-worker/testing), run here
 * with vitest.
 */
import { afterEach, describe, it } from 'vitest';
import { idempotencyStoreContract, type MakeStore, type StoreContractOptions } from '../../src/testing/store-contract.js';

export type { MakeStore, MakeStoreOptions, PrivateServer } from '../../src/testing/store-contract.js';

export function storeContract(name: string, makeStore: MakeStore, options: Omit<StoreContractOptions, 'runner'>): void {
  idempotencyStoreContract(name, makeStore, { ...options, runner: { describe, it, afterEach } });
}
