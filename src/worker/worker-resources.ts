import type { ConsumerApi } from '../client/consumer-api.js';
import type { WorkerConfig } from '../config/types.js';
import type { LoadedHandler } from '../handlers/loader.js';
import type { EffectTransactionsOptions } from '../idempotency/postgres-transactions.js';
import type { IdempotencyStore } from '../idempotency/store.js';
import type { Cleanup } from './life-cycle.js';

// What the worker opens for itself when the caller gives none (start.ts): each closed by a cleanup.

/**
 * The one scope the worker's token asks for: pull and acknowledge need read:events
 * (docs/platform-api.md, "Authentication"). The client's default (every scope enabled for the
 * application) would hand a long-running process write access it never uses.
 */
export const WORKER_TOKEN_SCOPE = 'read:events';

/** The platform client of `run`'s options. */
export async function openPlatformClient(config: WorkerConfig, maxLeases: number, cleanups: Cleanup[]): Promise<ConsumerApi> {
  const { createClient } = await import('../client/index.js');
  const owned = createClient({
    baseUrl: config.baseUrl,
    authUrl: config.authUrl,
    ...(config.tenant === undefined ? {} : { tenant: config.tenant }),
    ...(config.clientId === undefined ? {} : { clientId: config.clientId }),
    ...(config.clientSecret === undefined ? {} : { clientSecret: config.clientSecret }),
    ...(config.apiKey === undefined ? {} : { apiKey: config.apiKey }),
    // Only a token request carries it; an API key is sent as is.
    scope: WORKER_TOKEN_SCOPE,
    // Every pull and ack on its way holds a workerId, so at most one connection per id (and the token's).
    connections: maxLeases + 1,
  });
  cleanups.push({ name: 'platform client', run: () => owned.close() });
  return owned;
}

/** The idempotency store of `run`'s options. */
export async function openIdempotencyStore(config: WorkerConfig, maxLeases: number, cleanups: Cleanup[]): Promise<IdempotencyStore> {
  const { createIdempotencyStore } = await import('../idempotency/index.js');
  const owned = await createIdempotencyStore(config.idempotencyUrl, {
    prefix: config.idempotencyPrefix,
    doneTtlMs: config.idempotencyTtlMs,
    poolSize: Math.min(maxLeases, 16) + 1,
  });
  cleanups.push({ name: 'idempotency store', run: () => owned.close() });
  return owned;
}

/** Transactional handlers' connections: one per call in flight, as many as the budget lets run at once. */
export function transactionsOf(config: WorkerConfig, handlers: readonly LoadedHandler[], maxInProgress: number): EffectTransactionsOptions | undefined {
  if (!handlers.some((h) => h.transactional === true)) return undefined;
  return { url: config.idempotencyUrl, prefix: config.idempotencyPrefix, doneTtlMs: config.idempotencyTtlMs, poolSize: maxInProgress };
}
