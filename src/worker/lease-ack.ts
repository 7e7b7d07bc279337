import { isRetryable } from '../client/errors.js';
import { whenAborted } from '../runtime/abort-fanout.js';
import type { AckResponse, AckStatus } from '../types.js';
import type { LeaseView } from './lease-view.js';
import { sleep } from '../runtime/clock.js';
import { backoffMs } from './timing.js';

const ACK_RETRY_BASE_MS = 100;
const ACK_RETRY_MAX_MS = 2_000;
/**
 * From the forced shutdown on, an ack unanswered this long is abandoned, so that a hung platform
 * cannot hold the process past `--shutdown-timeout` (plus this) until the lease expires.
 */
export const FORCED_ACK_GRACE_MS = 1_000;

/**
 * Acknowledges a lease. A network error or 5xx is retried (bounded exponential backoff with jitter)
 * until the lease expires: after that the ack could only be `stale`. A `stale` answer means the lease
 * expired and went to another worker (spec): nothing committed; logged and counted, never retried.
 * Not tied to the drain signal: a failed ack at shutdown is what requeues the lease at once. At the
 * forced shutdown, though, an ack still unanswered after FORCED_ACK_GRACE_MS is abandoned: the lease
 * expires on the platform and its events are redelivered; done marks were stored before the ack, so the
 * effects of the events that finished stay single. Resolves with the answer, or undefined without one.
 */
export async function acknowledgeLease(lease: LeaseView, sent: AckStatus): Promise<AckResponse | undefined> {
  const { api, destination, events, forceSignal, clock } = lease.context;
  const { pulled, slot, log } = lease;
  const lastSequence = pulled.events.at(-1)?.sequence;
  const base = { workerId: slot.id, leaseId: pulled.leaseId, generation: pulled.generation, sent, ...(lastSequence === undefined ? {} : { lastSequence }) };
  const startedMs = performance.now();
  let giveUpAtMs = lease.expiresAtMs;
  let giveUpReason = 'the lease expired before the ack was answered';
  let inFlight = false;
  const forced = whenAborted(forceSignal, () => {
    if (clock.now() + FORCED_ACK_GRACE_MS >= giveUpAtMs) return;
    giveUpAtMs = clock.now() + FORCED_ACK_GRACE_MS;
    giveUpReason = 'forced shutdown: the ack was abandoned';
    // Re-arming while the call runs moves its timeout: the call holds the same signal.
    if (inFlight) slot.ackTimeout.arm(FORCED_ACK_GRACE_MS, giveUpReason);
  });
  try {
    for (let attempt = 1; ; attempt++) {
      let response: AckResponse;
      // Not AbortSignal.timeout: that one keeps its timer until it fires (a lease's worth) and costs
      // more to create, once per lease; the workerId's reusable one is armed instead.
      const signal = slot.ackTimeout.arm(Math.max(1, giveUpAtMs - clock.now()), giveUpReason);
      inFlight = true;
      try {
        response = await api.acknowledge(destination, { leaseId: pulled.leaseId, generation: pulled.generation, status: sent }, signal);
      } catch (err) {
        const waitMs = backoffMs(attempt, ACK_RETRY_BASE_MS, ACK_RETRY_MAX_MS);
        if (isRetryable(err) && clock.now() + waitMs < giveUpAtMs) {
          log.warn({ err, attempt, sent }, 'acknowledge failed: retrying before the lease expires');
          await sleep(clock, waitMs);
          continue;
        }
        events.emit('ack:done', { ...base, status: 'error', durationMs: performance.now() - startedMs });
        log.error({ err, sent }, `acknowledge failed (${giveUpReason}): the lease will expire and its events be redelivered`);
        return undefined;
      } finally {
        inFlight = false;
        slot.ackTimeout.disarm();
      }
      // Outside the try: what listeners do can never turn an answered ack into a failed one.
      events.emit('ack:done', { ...base, status: response.status, response, durationMs: performance.now() - startedMs });
      if (response.status === 'stale') log.warn({ sent }, 'ack was stale: the lease expired and was handed out again (raise --visibility or lower --limit)');
      return response;
    }
  } finally {
    forced.cancel();
  }
}
