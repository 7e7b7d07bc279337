import type { LoadedHandler } from '../handlers/loader.js';
import { MemoryPermits } from '../idempotency/memory-permits.js';
import type { IdempotencyStore } from '../idempotency/store.js';
import type { Clock } from '../runtime/clock.js';
import { Limiter } from './limiter.js';
import { RunGate } from './run-gate.js';

/**
 * The gate of the handlers that declare limits, on the store's permits when it shares them (Redis,
 * PostgreSQL: the limits hold for every replica) or on this process's (memory, SQLite). Undefined
 * when no handler declares limits: the worker then never asks.
 */
export function createRunGate(store: Pick<IdempotencyStore, 'permits'>, handlers: readonly LoadedHandler[], options: { visibilityMs: number; clock?: Clock }): RunGate | undefined {
  const limited = handlers.filter((handler) => handler.limits !== undefined);
  if (limited.length === 0) return undefined;
  const limiter = new Limiter(store.permits ?? new MemoryPermits(options.clock), options.clock);
  for (const handler of limited) limiter.add(handler.name, handler.limits as NonNullable<LoadedHandler['limits']>);
  // As the retries within a lease: a wait stays there when it ends a quarter of the lease before its deadline.
  return new RunGate(limiter, { holdBackMs: options.visibilityMs / 4, ...(options.clock === undefined ? {} : { clock: options.clock }) });
}
