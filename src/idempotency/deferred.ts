import type { CloudEvent } from '../types.js';

/**
 * Deferred runs: a handler's run on an event that has to wait longer than its lease can usefully
 * hold (its retry time, its handler's open breaker, or an earlier deferred run of its chain), kept
 * in the idempotency store so that its lease can be acked and the platform's window stays free
 * (docs/architecture.md, "Deferred runs"). A run is stored before the ack that lets the platform
 * forget its event, and removed only once its end is recorded (a done mark, a dead letter), so a
 * process killed at any point loses none.
 *
 * A **chain** is one handler's runs on one subject (`chainOf(handler, subject)`): they run in
 * stream order (`sequence`), so only the first run of a chain (its **head**) may start, and only once
 * its `retryAtMs` came. A later event of a chain that holds deferred runs joins it (deferred behind
 * them) instead of overtaking them.
 */
export interface DeferredRun {
  /** The idempotency key `<handler>:<event id>`: one deferred run per key. */
  key: string;
  handler: string;
  /** `chainOf(handler, event.subject)`. */
  chain: string;
  /** The event's place in the stream (a decimal string, compared as `compareSequences` does). */
  sequence: string;
  /** The event as the platform delivered it. */
  event: CloudEvent;
  /** Not started before this (ms since the epoch). */
  retryAtMs: number;
  /** When the run was first deferred (ms since the epoch): its age is counted from here. */
  deferredAtMs: number;
  /** Why it waits: its retry time, its handler's breaker, or an earlier run of its chain. */
  reason: DeferredReason;
}

export type DeferredReason = 'retry' | 'breaker' | 'chain' | 'limit';

/** Per handler: how many runs are deferred, and when the oldest was deferred. */
export interface DeferredStats {
  count: number;
  oldestDeferredAtMs: number;
}

/**
 * What a store that can hold deferred runs offers (SQLite, Redis, PostgreSQL). The memory store has
 * none: there, runs wait in their lease (docs/stores.md says the bound).
 */
export interface DeferredRuns {
  /**
   * Stores the runs, atomically with dropping `owner`'s claims on their keys (as `release`), in one
   * round trip / transaction. A key already deferred is updated: it takes the new `retryAtMs` and
   * `reason`, keeps its first `deferredAtMs`. A key already done is not deferred.
   */
  defer(runs: readonly DeferredRun[], owner: string): Promise<void>;
  /** Which of `chains` hold at least one deferred run (one round trip). */
  chainsWithRuns(chains: readonly string[]): Promise<Set<string>>;
  /**
   * Heads of chains whose `retryAtMs <= nowMs`, the earliest retry time first, at most `limit`,
   * leaving out `handlers` skipped (their breaker is open). A head is the run of its chain with the
   * lowest sequence; the runs behind it are not due whatever their retry time.
   */
  due(nowMs: number, limit: number, skipHandlers?: ReadonlySet<string>): Promise<DeferredRun[]>;
  /** The earliest `retryAtMs` among the chains' heads (undefined when none is deferred). */
  nextDueAtMs(): Promise<number | undefined>;
  /** Removes the runs of these keys (their end is recorded). Missing keys are ignored. */
  remove(keys: readonly string[]): Promise<void>;
  /** Sets a deferred run's retry time (`run now`); false when no run of that key is deferred. */
  reschedule(key: string, retryAtMs: number): Promise<boolean>;
  /** Deferred runs in chain order (by handler, chain, sequence), optionally of one handler, at most `limit`. */
  list(options: { handler?: string; limit: number }): Promise<DeferredRun[]>;
  /** One deferred run by key. */
  get(key: string): Promise<DeferredRun | undefined>;
  /** Per handler with deferred runs: their count and the oldest's deferral time. */
  stats(): Promise<Map<string, DeferredStats>>;
}

/** The chain of one handler's runs on one subject. */
export function chainOf(handler: string, subject: string): string {
  return `${handler}\u0000${subject}`;
}

/** A store that can hold deferred runs exposes them as `deferred`. */
export function deferredRunsOf(store: object): DeferredRuns | undefined {
  return (store as { deferred?: DeferredRuns }).deferred;
}
