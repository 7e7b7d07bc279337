import type { AckRequest, AckResponse, LeaseBatch, PullParams } from '../types.js';

/**
 * The narrow slice of the platform client that the worker loop sees. Pull and acknowledge do not
 * retry inside the client: the loop owns backoff, deadlines and shutdown. A 401 is answered inside
 * the client by refreshing the token once and repeating the request.
 *
 * Failures are thrown as errors with a stable `code` (see client/errors.ts): `DW_ERR_API` carrying
 * `status`, `problem` and `retryAfterMs`; `DW_ERR_NETWORK`; `DW_ERR_AUTH`. Ask `isRetryable(err)`.
 */
export type PullResult = { status: 200; batch: LeaseBatch } | { status: 204 } | { status: 409 } | { status: 429; retryAfterMs?: number };

export interface ConsumerApi {
  pull(destinationId: string, params: PullParams, signal?: AbortSignal): Promise<PullResult>;
  acknowledge(destinationId: string, ack: AckRequest, signal?: AbortSignal): Promise<AckResponse>;
  /** Resolves once a credential is in hand (a token obtained, or an API key configured) and requests can go out. */
  ensureCredential(signal?: AbortSignal): Promise<void>;
}
