import type { DeferredRun } from './deferred.js';
import { compareSequences } from '../runtime/sequence.js';

/**
 * The runs of one `defer` call, one per key (an adapter's upsert may touch a row once per
 * statement): a key given twice takes its last `retryAtMs` and `reason` and keeps its first
 * `deferredAtMs`, as two calls in a row would.
 */
export function distinctRuns(runs: readonly DeferredRun[]): DeferredRun[] {
  const byKey = new Map<string, DeferredRun>();
  for (const run of runs) {
    const earlier = byKey.get(run.key);
    byKey.set(run.key, earlier === undefined ? run : { ...earlier, retryAtMs: run.retryAtMs, reason: run.reason });
  }
  return [...byKey.values()];
}

/** Chain order: by handler, chain, then stream order within the chain. */
export function compareRuns(x: DeferredRun, y: DeferredRun): number {
  return compareText(x.handler, y.handler) || compareText(x.chain, y.chain) || compareSequences(x.sequence, y.sequence);
}

/**
 * Code point order, as SQLite (BINARY), PostgreSQL (bytea, COLLATE "C") and Redis (bytes) compare
 * UTF-8 text: JavaScript's `<` compares UTF-16 units, which differ above U+FFFF.
 */
export function compareText(x: string, y: string): number {
  if (x === y) return 0;
  return Buffer.compare(Buffer.from(x, 'utf8'), Buffer.from(y, 'utf8'));
}
