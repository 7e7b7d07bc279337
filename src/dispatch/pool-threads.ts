import { availableParallelism } from 'node:os';

// How many threads the pool runs, and the file each starts with.

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

/**
 * The file each handler thread starts with: compiled, `dist/dispatch/thread-start.cjs` next to this
 * file; from TypeScript sources (vitest, `node --import tsx`), `thread-bootstrap.cjs`, which compiles
 * `thread-entry.ts` inside the thread. Both are CommonJS and import the ES entry asynchronously
 * (thread-start.cts says why).
 */
export function threadEntry(): string {
  const self = import.meta.url;
  return self.endsWith('.ts') ? new URL('./thread-bootstrap.cjs', self).href : new URL('./thread-start.cjs', self).href;
}
