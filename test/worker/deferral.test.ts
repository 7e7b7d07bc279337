/**
 * deferral.ts on its own, with the fake clock: what makes a run wait (runWait: its chain, its retry
 * time, its handler's breaker) and how deferrals reach the store (one call per turn and owner).
 */
import { EventEmitter } from 'node:events';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type { LoadedHandler } from '../../src/handlers/loader.js';
import { chainOf, type DeferredRun, type DeferredRuns } from '../../src/idempotency/deferred.js';
import { MemoryDeferredRuns } from '../../src/idempotency/memory-deferred.js';
import { createFakeClock, type Clock } from '../../src/testing/clock.js';
import type { CloudEvent } from '../../src/types.js';
import { Breakers } from '../../src/worker/breakers.js';
import { deferRun, runWait } from '../../src/worker/deferral.js';
import type { LeaseView } from '../../src/worker/lease-view.js';
import { RecentChains } from '../../src/worker/recent-chains.js';

const handler = { name: 'sync' } as LoadedHandler;
const event = (i: number): CloudEvent =>
  ({
    specversion: '1.0',
    id: `e-${i}`,
    source: 's',
    type: 't',
    subject: `s-${i % 2}`,
    sequence: String(i),
    time: '2026-01-01T00:00:00Z',
    data: {},
  }) as CloudEvent;

function leaseOf(parts: {
  clock?: Clock;
  breakers: Breakers;
  deferred?: DeferredRuns;
  recentChains?: RecentChains;
  deferredChains?: Set<string>;
  failures?: ({ retryAtMs: number } | undefined)[];
  claims?: string[];
  runsChainHeads?: boolean;
}): LeaseView {
  const keys = Array.from({ length: 4 }, (_, i) => `sync:e-${i}`);
  return {
    keys,
    claims: parts.claims ?? keys.map(() => 'new'),
    failures: parts.failures,
    deferredChains: parts.deferredChains,
    runsChainHeads: parts.runsChainHeads ?? false,
    deferredKeys: new Set<string>(),
    claimOwner: 'owner-1',
    workerId: 'w-0',
    context: {
      clock: parts.clock ?? createFakeClock(),
      breakers: parts.breakers,
      deferred: parts.deferred,
      recentChains: parts.recentChains,
      events: new EventEmitter(),
      runDeferredAt: () => {},
    },
  } as unknown as LeaseView;
}

describe('runWait', () => {
  const silent = pino({ level: 'silent' });

  it("a chain that holds deferred runs holds the run (not a deferred batch's own head); else its retry time; else nothing", () => {
    const clock = createFakeClock();
    const breakers = new Breakers(['sync'], { enabled: true, failureRatio: 0.5, window: 2, cooldownMs: 1_000 }, silent, () => {}, clock);
    const now = clock.now();
    const held = leaseOf({ breakers, deferredChains: new Set([chainOf('sync', 's-0')]) });
    expect(runWait(held, 0, handler, 's-0', now)).toEqual({ reason: 'chain', retryAtMs: now });
    expect(runWait(held, 1, handler, 's-1', now)).toBeUndefined();
    expect(runWait(leaseOf({ breakers, deferredChains: new Set([chainOf('sync', 's-0')]), runsChainHeads: true }), 0, handler, 's-0', now)).toBeUndefined();
    const retrying = leaseOf({ breakers, failures: [{ retryAtMs: now + 5_000 }] });
    expect(runWait(retrying, 0, handler, 's-0', now)).toEqual({ reason: 'retry', retryAtMs: now + 5_000 });
    expect(runWait(retrying, 0, handler, 's-0', now + 5_000)).toBeUndefined();
  });

  it("a chain this process deferred into since the lease read the store holds it too, for a lease's length", () => {
    const clock = createFakeClock();
    const breakers = new Breakers(['sync'], { enabled: false, failureRatio: 0.5, window: 2, cooldownMs: 1_000 }, silent, () => {}, clock);
    const recent = new RecentChains(10_000);
    recent.add(chainOf('sync', 's-1'), clock.now());
    const lease = leaseOf({ breakers, recentChains: recent });
    expect(runWait(lease, 1, handler, 's-1', clock.now())?.reason).toBe('chain');
    expect(runWait(lease, 1, handler, 's-1', clock.now() + 60_000)).toBeUndefined();
  });

  it("an open breaker holds its handler's runs until its cool-down ends; half-open, one run is the probe", async () => {
    const clock = createFakeClock();
    const breakers = new Breakers(['sync'], { enabled: true, failureRatio: 0.5, window: 2, cooldownMs: 1_000 }, silent, () => {}, clock);
    breakers.record('sync', 'failed');
    breakers.record('sync', 'failed');
    const lease = leaseOf({ breakers });
    expect(runWait(lease, 0, handler, 's-0', clock.now())).toEqual({ reason: 'breaker', retryAtMs: clock.now() + 1_000 });
    await clock.advance(1_000);
    expect(breakers.state('sync')).toBe('half-open');
    expect(runWait(lease, 0, handler, 's-0', clock.now())).toBeUndefined();
    expect(runWait(lease, 1, handler, 's-1', clock.now())?.reason).toBe('breaker');
  });
});

describe('deferRun', () => {
  const silent = pino({ level: 'silent' });

  it('the runs deferred in one turn reach the store in one call; each caller hears it, and the chains are remembered', async () => {
    const clock = createFakeClock();
    const breakers = new Breakers(['sync'], { enabled: false, failureRatio: 0.5, window: 2, cooldownMs: 1_000 }, silent, () => {}, clock);
    const calls: DeferredRun[][] = [];
    class CountingRuns extends MemoryDeferredRuns {
      override defer(runs: readonly DeferredRun[], owner: string): Promise<void> {
        calls.push([...runs]);
        return super.defer(runs, owner);
      }
    }
    const store = new CountingRuns();
    const deferred: DeferredRuns = store;
    const recent = new RecentChains(10_000);
    const lease = leaseOf({ clock, breakers, deferred, recentChains: recent });
    await Promise.all([0, 1, 2].map((k) => deferRun(lease, k, 'sync', event(k), { reason: 'retry', retryAtMs: 5 })));
    expect(calls.map((c) => c.map((r) => r.key))).toEqual([['sync:e-0', 'sync:e-1', 'sync:e-2']]);
    expect((await store.list({ limit: 10 })).map((r) => r.key).sort()).toEqual(['sync:e-0', 'sync:e-1', 'sync:e-2']);
    expect([...(lease.deferredKeys ?? [])].sort()).toEqual(['sync:e-0', 'sync:e-1', 'sync:e-2']);
    expect(recent.has(chainOf('sync', 's-0'), clock.now())).toBe(true);
    await deferRun(lease, 3, 'sync', event(3), { reason: 'chain', retryAtMs: 5 });
    expect(calls).toHaveLength(2);
  });

  it('a store that fails rejects every run of the call: none is taken for deferred', async () => {
    const clock = createFakeClock();
    const breakers = new Breakers(['sync'], { enabled: false, failureRatio: 0.5, window: 2, cooldownMs: 1_000 }, silent, () => {}, clock);
    const failing = { defer: () => Promise.reject(new Error('store down')) } as unknown as DeferredRuns;
    const lease = leaseOf({ breakers, deferred: failing });
    const results = await Promise.allSettled([0, 1].map((k) => deferRun(lease, k, 'sync', event(k), { reason: 'retry', retryAtMs: 5 })));
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect(lease.deferredKeys?.size).toBe(0);
  });
});
