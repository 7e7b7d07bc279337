import type { ClaimState, FailureHistory } from '../idempotency/store.js';
import type { RunTrace } from '../tracing/run-tracer.js';
import type { LeaseView } from './lease-view.js';
import { sleep } from '../runtime/clock.js';

const BUSY_POLL_FIRST_MS = 100;
const BUSY_POLL_MAX_MS = 1_000;

/** A claim and the failure history read with it. */
export interface Claimed {
  state: ClaimState;
  history: FailureHistory | undefined;
}

/**
 * Claims one key of the lease again, for a retry in the same lease (recording the failure gave the
 * claim up); a claim another owner took meanwhile is waited for (waitForClaim).
 */
export async function claimAgain(lease: LeaseView, key: string, trace: RunTrace): Promise<Claimed> {
  const result = await trace.call('idempotency claim', () =>
    lease.context.store.claim([key], lease.claimOwner, Math.max(1, lease.expiresAtMs - lease.context.clock.now())),
  );
  const state = result.states[0] ?? 'busy';
  if (state !== 'busy') return { state, history: result.failures?.[0] };
  return waitForClaim(lease, key, trace);
}

/**
 * A claim another owner holds (the lease moved between workers while the old holder may still run
 * the handler) is polled, backing off, until done (a duplicate), released or expired (ours), or the
 * lease's deadline (still busy).
 */
export async function waitForClaim(lease: LeaseView, key: string, trace: RunTrace): Promise<Claimed> {
  const clock = lease.context.clock;
  let waitMs = BUSY_POLL_FIRST_MS;
  for (;;) {
    if (lease.signal.aborted || clock.now() + waitMs >= lease.deadlineMs) return { state: 'busy', history: undefined };
    await sleep(clock, waitMs, lease.signal);
    if (lease.signal.aborted) return { state: 'busy', history: undefined };
    const result = await trace.call('idempotency claim', () =>
      lease.context.store.claim([key], lease.claimOwner, Math.max(1, lease.expiresAtMs - clock.now())),
    );
    const state = result.states[0] ?? 'busy';
    if (state !== 'busy') return { state, history: result.failures?.[0] };
    waitMs = Math.min(BUSY_POLL_MAX_MS, waitMs * 2);
  }
}
