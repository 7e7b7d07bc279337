import { isRetryable } from '../client/errors.js';
import type { AckResponse, AckStatus, LeaseBatch } from '../types.js';
import type { BatchContext } from './batch.js';
import { backoffMs, sleep } from './timing.js';

const ACK_RETRY_BASE_MS = 100;
const ACK_RETRY_MAX_MS = 2_000;

/**
 * Acknowledges a batch. A network error or 5xx is retried (bounded exponential backoff with jitter)
 * until the lease expires: after that the ack could only be `stale`. A `stale` answer means the lease
 * expired and went to another worker (spec): nothing committed; logged and counted, never retried.
 * Not tied to the shutdown signal: a failed ack at shutdown is what requeues the batch at once.
 */
export async function acknowledgeBatch(ctx: BatchContext, batch: LeaseBatch, sent: AckStatus, expiresAtMs: number): Promise<AckResponse | undefined> {
  const lastSequence = batch.events.at(-1)?.sequence;
  const base = { workerId: ctx.workerId, leaseId: batch.leaseId, generation: batch.generation, sent, ...(lastSequence === undefined ? {} : { lastSequence }) };
  for (let attempt = 1; ; attempt++) {
    const remainingMs = expiresAtMs - Date.now();
    // Not AbortSignal.timeout: that one keeps its timer until it fires (a lease's worth) and costs
    // more to create, once per batch.
    const signal = ctx.ackTimeout.arm(Math.max(1, remainingMs), 'the lease expired before the ack was answered');
    let response: AckResponse;
    try {
      response = await ctx.api.acknowledge(ctx.destination, { leaseId: batch.leaseId, generation: batch.generation, status: sent }, signal);
    } catch (err) {
      const waitMs = backoffMs(attempt, ACK_RETRY_BASE_MS, ACK_RETRY_MAX_MS);
      if (isRetryable(err) && Date.now() + waitMs < expiresAtMs) {
        ctx.logger.warn({ err, attempt, sent }, 'acknowledge failed: retrying before the lease expires');
        await sleep(waitMs);
        continue;
      }
      ctx.events.emit('ack:done', { ...base, status: 'error' });
      ctx.logger.error({ err, sent }, 'acknowledge failed: the lease will expire and the batch be redelivered');
      return undefined;
    } finally {
      ctx.ackTimeout.disarm();
    }
    // Outside the try: what listeners do can never turn an answered ack into a failed one.
    ctx.events.emit('ack:done', { ...base, status: response.status, response });
    if (response.status === 'stale') {
      ctx.logger.warn({ sent }, 'ack was stale: the lease expired and was handed out again (raise --visibility or lower --limit)');
    }
    return response;
  }
}
