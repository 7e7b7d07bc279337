import { availableParallelism } from 'node:os';

/**
 * Pool sizing: one thread per core except the one the main thread keeps busy (HTTP, JSON, the store,
 * scheduling), but at least two, so that a handler blocking its thread never stalls every other
 * handler until the blocked thread is found and replaced (deadline + grace + ping, seconds); and never
 * more than the events that can run at once (`--max-in-progress`). Handlers are mostly I/O-bound, so
 * one thread runs several at once instead of the pool growing to one thread per event (a thread costs
 * a V8 heap and a module load, docs/benchmarks.md#memory): threads = min(budget, max(2, cores - 1)).
 * The runs spread over them by load (thread-pool's sendBalanced), with no cap per thread.
 */
export function poolSize(maxInProgress: number, cores: number = availableParallelism()): number {
  const budget = Math.max(1, maxInProgress);
  return Math.max(1, Math.min(budget, Math.max(2, cores - 1)));
}
