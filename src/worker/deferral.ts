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
    if (lease.deferredChains?.has(chain) === true || context.recentChains?.has(chain, nowMs) === true) return { reason: 'chain', retryAtMs: Math.max(nowMs, retryAtMs) };
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
  const nowMs = Date.now();
  const chain = chainOf(handler, event.subject);
  const run: DeferredRun = { key: lease.keys[k] as string, handler, chain, sequence: event.sequence, event, retryAtMs: wait.retryAtMs, deferredAtMs: nowMs, reason: wait.reason };
  await deferred.defer([run], lease.claimOwner);
  context.recentChains?.add(chain, nowMs);
  lease.deferredKeys?.add(run.key);
  context.events.emit('run:deferred', { workerId: lease.workerId, event, handler, reason: wait.reason, retryAtMs: wait.retryAtMs });
  context.runDeferredAt?.(wait.retryAtMs);
}

