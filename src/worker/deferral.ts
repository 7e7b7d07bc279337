import { chainOf, type DeferredReason, type DeferredRun, type DeferredRuns } from '../idempotency/deferred.js';
import type { LoadedHandler } from '../handlers/loader.js';
import type { CloudEvent } from '../types.js';
import type { LeaseView } from './lease-view.js';

/** Why a run may not start now, and when it may. */
export interface RunWait {
  reason: DeferredReason;
  retryAtMs: number;
}

/**
 * Whether run `k` of `lease` (its handler `handler`) must wait rather than start now: its chain holds
 * deferred runs, its retry time (from the store) has not come, or its handler's breaker is open.
 * Only with a store that holds deferred runs; a half-open breaker takes the run as its probe.
 */
export function runWait(lease: LeaseView, k: number, handler: LoadedHandler, subject: string, nowMs: number): RunWait | undefined {
  const context = lease.context;
  const history = lease.failures?.[k];
  const claimedNew = lease.claims[k] === 'new';
  const retryAtMs = claimedNew && history !== undefined ? history.retryAtMs : 0;
  if (!lease.runsChainHeads) {
    const chain = chainOf(handler.name, subject);
    if (lease.deferredChains?.has(chain) === true || context.recentChains?.has(chain, nowMs) === true)
      return { reason: 'chain', retryAtMs: Math.max(nowMs, retryAtMs) };
  }
  if (retryAtMs > nowMs) return { reason: 'retry', retryAtMs };
  if (context.breakers.allClosed || !claimedNew) return undefined;
  const blocked = context.breakers.admit([handler.name], nowMs);
  return blocked === undefined ? undefined : { reason: 'breaker', retryAtMs: blocked.untilMs };
}

/**
 * Stores run `k` of `lease` as deferred (dropping the lease's claim on its key in the same step) and
 * tells the process: its chain is remembered (RecentChains), the deferred runner wakes at its time.
 */
export async function deferRun(lease: LeaseView, k: number, handler: string, event: CloudEvent, wait: RunWait): Promise<void> {
  const context = lease.context;
  const deferred = context.deferred as DeferredRuns;
  const nowMs = context.clock.now();
  const chain = chainOf(handler, event.subject);
  const run: DeferredRun = {
    key: lease.keys[k] as string,
    handler,
    chain,
    sequence: event.sequence,
    event,
    retryAtMs: wait.retryAtMs,
    deferredAtMs: nowMs,
    reason: wait.reason,
  };
  await deferInTurn(deferred, run, lease.claimOwner);
  context.recentChains?.add(chain, nowMs);
  lease.deferredKeys?.add(run.key);
  context.events.emit('run:deferred', { workerId: lease.workerId, event, handler, reason: wait.reason, retryAtMs: wait.retryAtMs });
  context.runDeferredAt?.(wait.retryAtMs);
}

interface PendingDefers {
  runs: DeferredRun[];
  /** The one store call for `runs`, made once this turn is over. */
  written: Promise<void>;
}

/** Per store, per claim owner: the runs deferred in this turn of the event loop, not yet written. */
const pending = new WeakMap<DeferredRuns, Map<string, PendingDefers>>();

/**
 * Defers `run` together with the others deferred in the same turn for the same owner: a lease that
 * defers several of its runs as it starts them writes them in one store call (one transaction, one
 * round trip), not one each, which would hold SQLite's synchronous driver on the main thread per run.
 * Each caller hears the call's outcome.
 */
function deferInTurn(deferred: DeferredRuns, run: DeferredRun, owner: string): Promise<void> {
  let byOwner = pending.get(deferred);
  if (byOwner === undefined) pending.set(deferred, (byOwner = new Map()));
  let write = byOwner.get(owner);
  if (write === undefined) {
    const owners = byOwner;
    const runs: DeferredRun[] = [];
    const written = Promise.resolve().then(() => {
      owners.delete(owner);
      return deferred.defer(runs, owner);
    });
    byOwner.set(owner, (write = { runs, written }));
  }
  write.runs.push(run);
  return write.written;
}
