import type { DeferredRun, DeferredRuns, DeferredStats } from './deferred.js';
import { compareRuns, distinctRuns } from './deferred-batch.js';
import { compareSequences } from '../runtime/sequence.js';

/** What `MemoryDeferredRuns` asks of the claims it sits beside. */
export interface MemoryDeferredRunsOptions {
  /**
   * Drops `owner`'s claims on the keys (as the store's `release`), called synchronously inside
   * `defer`. Default: none (no claims to drop).
   */
  release?: (keys: readonly string[], owner: string) => void;
  /** Whether the key's effect is recorded as done: such a key is not deferred. Default: never. */
  isDone?: (key: string) => boolean;
}

/**
 * Deferred runs in process memory: the reference implementation of the contract, for unit tests
 * of the worker. No store offers it (the memory store loses runs with the process, so with it runs
 * wait in their lease); a test constructs it beside a store, e.g.
 * `new MemoryDeferredRuns({ release: (keys, owner) => void store.release(keys, owner) })`.
 */
export class MemoryDeferredRuns implements DeferredRuns {
  readonly #release: (keys: readonly string[], owner: string) => void;
  readonly #isDone: (key: string) => boolean;
  readonly #runs = new Map<string, DeferredRun>();
  /** Per chain, its runs in stream order: the first is the head. */
  readonly #chains = new Map<string, DeferredRun[]>();

  constructor(options: MemoryDeferredRunsOptions = {}) {
    this.#release = options.release ?? (() => {});
    this.#isDone = options.isDone ?? (() => false);
  }

  async defer(runs: readonly DeferredRun[], owner: string): Promise<void> {
    this.#release(
      runs.map((run) => run.key),
      owner,
    );
    for (const run of distinctRuns(runs)) {
      if (this.#isDone(run.key)) continue;
      const stored = this.#runs.get(run.key);
      if (stored !== undefined) {
        this.#replace({ ...stored, retryAtMs: run.retryAtMs, reason: run.reason });
        continue;
      }
      const copy = copyRun(run);
      this.#runs.set(copy.key, copy);
      const chain = this.#chains.get(copy.chain) ?? [];
      const at = chain.findIndex((other) => compareSequences(copy.sequence, other.sequence) < 0);
      chain.splice(at < 0 ? chain.length : at, 0, copy);
      this.#chains.set(copy.chain, chain);
    }
  }

  async chainsWithRuns(chains: readonly string[]): Promise<Set<string>> {
    return new Set(chains.filter((chain) => this.#chains.has(chain)));
  }

  async due(nowMs: number, limit: number, skipHandlers?: ReadonlySet<string>): Promise<DeferredRun[]> {
    const heads: DeferredRun[] = [];
    for (const [head] of this.#chains.values()) {
      if (head !== undefined && head.retryAtMs <= nowMs && skipHandlers?.has(head.handler) !== true) heads.push(head);
    }
    return heads
      .sort((x, y) => x.retryAtMs - y.retryAtMs || compareRuns(x, y))
      .slice(0, Math.max(0, limit))
      .map(copyRun);
  }

  async nextDueAtMs(): Promise<number | undefined> {
    let earliest: number | undefined;
    for (const [head] of this.#chains.values()) {
      if (head !== undefined && (earliest === undefined || head.retryAtMs < earliest)) earliest = head.retryAtMs;
    }
    return earliest;
  }

  async remove(keys: readonly string[]): Promise<void> {
    for (const key of keys) {
      const run = this.#runs.get(key);
      if (run === undefined) continue;
      this.#runs.delete(key);
      const chain = (this.#chains.get(run.chain) ?? []).filter((other) => other.key !== key);
      if (chain.length === 0) this.#chains.delete(run.chain);
      else this.#chains.set(run.chain, chain);
    }
  }

  async reschedule(key: string, retryAtMs: number): Promise<boolean> {
    const run = this.#runs.get(key);
    if (run === undefined) return false;
    this.#replace({ ...run, retryAtMs });
    return true;
  }

  async list(options: { handler?: string; limit: number }): Promise<DeferredRun[]> {
    const runs = [...this.#runs.values()].filter((run) => options.handler === undefined || run.handler === options.handler);
    return runs.sort(compareRuns).slice(0, Math.max(0, options.limit)).map(copyRun);
  }

  async get(key: string): Promise<DeferredRun | undefined> {
    const run = this.#runs.get(key);
    return run === undefined ? undefined : copyRun(run);
  }

  async stats(): Promise<Map<string, DeferredStats>> {
    const stats = new Map<string, DeferredStats>();
    for (const run of this.#runs.values()) {
      const seen = stats.get(run.handler);
      if (seen === undefined) stats.set(run.handler, { count: 1, oldestDeferredAtMs: run.deferredAtMs });
      else stats.set(run.handler, { count: seen.count + 1, oldestDeferredAtMs: Math.min(seen.oldestDeferredAtMs, run.deferredAtMs) });
    }
    return stats;
  }

  /** Puts an updated run (same key, chain and sequence) in place of the stored one. */
  #replace(run: DeferredRun): void {
    this.#runs.set(run.key, run);
    const chain = this.#chains.get(run.chain) as DeferredRun[];
    chain[chain.findIndex((other) => other.key === run.key)] = run;
  }
}

/**
 * A copy the caller cannot change the stored run through (the shared stores hand back parsed
 * copies too); the event goes through JSON, as the shared stores keep it.
 */
function copyRun(run: DeferredRun): DeferredRun {
  return { ...run, event: JSON.parse(JSON.stringify(run.event)) as DeferredRun['event'] };
}
