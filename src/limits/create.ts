import type { LoadedHandler } from '../handlers/loader.js';
import { MemoryPermits } from '../idempotency/memory-permits.js';
import type { IdempotencyStore } from '../idempotency/store.js';
import type { Logger } from 'pino';
import type { Clock } from '../runtime/clock.js';
import { Limiter } from './limiter.js';
import { RunGate } from './run-gate.js';

/**
 * The longest wait for a permit spent in the lease when the store can hold the run: enough for the
 * window to slide by a few starts at a steady pace, short enough that a waiting run does not keep a
 * place in the budget from other handlers for long.
 */
export const IN_LEASE_WAIT_MS = 250;

/**
 * The gate of the handlers that declare limits, on the store's permits when it shares them (Redis,
 * PostgreSQL: the limits hold for every replica) or on this process's (memory, SQLite). Undefined
 * when no handler declares limits: the worker then never asks.
 */
export function createRunGate(
  store: Pick<IdempotencyStore, 'permits'>,
  handlers: readonly LoadedHandler[],
  options: { visibilityMs: number; canDefer: boolean; clock?: Clock; logger?: Pick<Logger, 'warn'> },
): RunGate | undefined {
  const limited = handlers.filter((handler) => handler.limits !== undefined);
  if (limited.length === 0) return undefined;
  if (store.permits === undefined) {
    options.logger?.warn(
      { handlers: limited.map((h) => h.name) },
      'handler limits hold per process: only a redis:// or postgres:// idempotency store shares them across replicas',
    );
  }
  const limiter = new Limiter(store.permits ?? new MemoryPermits(options.clock), options.clock);
  for (const handler of limited) limiter.add(handler.name, handler.limits as NonNullable<LoadedHandler['limits']>);
  // As the retries within a lease: a wait stays there when it ends a quarter of the lease before its
  // deadline; with a store that holds deferred runs, only a short one (it holds a place in the budget).
  return new RunGate(limiter, {
    holdBackMs: options.visibilityMs / 4,
    ...(options.canDefer ? { maxInLeaseWaitMs: IN_LEASE_WAIT_MS } : {}),
    ...(options.clock === undefined ? {} : { clock: options.clock }),
  });
}
