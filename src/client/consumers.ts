import type { AckRequest, AckResponse, CloudEvent, LeaseBatch, PullParams } from '../types.js';
import type { PullResult } from './consumer-api.js';
import { ApiError, retryAfterMs } from './errors.js';
import { pathOf, requireId, type Send } from './transport.js';

/**
 * Durable event consumers (spec: Pull a batch / Acknowledge a batch). Pull and acknowledge never
 * retry here: the worker loop owns backoff, deadlines and shutdown (consumer-api.ts). Only the one
 * 401 refresh of the transport applies.
 */

/** `POST /v1/event-destinations/{id}/pull`: 200 lease batch, 204 caught up, 409 paused, 429 window full. */
export async function pull(transport: Send, destinationId: string, params: PullParams, signal?: AbortSignal): Promise<PullResult> {
  const path = pathOf`/v1/event-destinations/${requireId('destinationId', destinationId)}/pull`;
  checkPullParams(params);
  const response = await transport.send({
    method: 'POST',
    path,
    query: { limit: params.limit, visibility: params.visibilitySeconds, workerId: params.workerId },
    signal,
    accept: [200, 204, 409, 429],
  });
  switch (response.status) {
    case 200:
      return { status: 200, batch: readLeaseBatch(response.body, path) };
    case 204:
      return { status: 204 };
    case 409:
      return { status: 409 };
    default: {
      const waitMs = retryAfterMs(response.headers);
      return waitMs === undefined ? { status: 429 } : { status: 429, retryAfterMs: waitMs };
    }
  }
}

/** `POST /v1/event-destinations/{id}/acknowledge` with exactly `{leaseId, generation, status}`. */
export async function acknowledge(transport: Send, destinationId: string, ack: AckRequest, signal?: AbortSignal): Promise<AckResponse> {
  const path = pathOf`/v1/event-destinations/${requireId('destinationId', destinationId)}/acknowledge`;
  checkAck(ack);
  // Strict on the way out: only the three spec fields, even if the caller's object carries more.
  const body: AckRequest = { leaseId: ack.leaseId, generation: ack.generation, status: ack.status };
  const response = await transport.send({ method: 'POST', path, body, signal });
  return readAckResponse(response.body, response.status, path);
}

/**
 * `POST /v1/event-destinations/{id}/pause|resume` (the emulator's; docs/platform-api.md does
 * not show these operations). Any 2xx is success; the body, if any, is ignored. Idempotent, so retried.
 */
export async function setPaused(transport: Send, destinationId: string, paused: boolean, signal?: AbortSignal): Promise<void> {
  const id = requireId('destinationId', destinationId);
  const path = paused ? pathOf`/v1/event-destinations/${id}/pause` : pathOf`/v1/event-destinations/${id}/resume`;
  await transport.send({ method: 'POST', path, signal, retry: true });
}

function checkPullParams(params: PullParams): void {
  // Spec, Limits: limit 1..100, visibility 1..600 seconds, workerId up to 200 characters.
  checkIntRange('limit', params.limit, 1, 100);
  checkIntRange('visibilitySeconds', params.visibilitySeconds, 1, 600);
  if (params.workerId !== undefined && (typeof params.workerId !== 'string' || params.workerId.length > 200)) {
    throw new RangeError(`workerId must be a string of at most 200 characters (got ${String(params.workerId).length})`);
  }
}

function checkIntRange(name: string, value: number | undefined, min: number, max: number): void {
  if (value === undefined) return;
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new RangeError(`${name} must be an integer ${min}..${max} (got ${value})`);
  }
}

function checkAck(ack: AckRequest): void {
  requireId('leaseId', ack.leaseId);
  if (!Number.isInteger(ack.generation) || ack.generation < 0) {
    throw new RangeError(`generation must be a non-negative integer (got ${ack.generation})`);
  }
  if (ack.status !== 'ok' && ack.status !== 'failed') {
    throw new TypeError(`ack status must be "ok" or "failed" (got ${JSON.stringify(ack.status)})`);
  }
}

/**
 * Liberal reading of a lease batch: numbers given as strings are converted, a numeric sequence
 * becomes its decimal string, unknown members are kept. Without a lease id or an events array the
 * batch cannot be acknowledged, so that is an ApiError.
 */
export function readLeaseBatch(body: unknown, path: string): LeaseBatch {
  const raw = asRecord(body);
  const leaseId = raw?.leaseId;
  const generation = Number(raw?.generation);
  const events = raw?.events;
  if (raw === undefined || (typeof leaseId !== 'string' && typeof leaseId !== 'number') || !Number.isFinite(generation) || !Array.isArray(events)) {
    throw malformed(200, path, 'a lease batch without leaseId, generation or events');
  }
  const attempt = Number(raw.attempt ?? 1);
  return {
    ...raw,
    leaseId: String(leaseId),
    generation,
    attempt: Number.isFinite(attempt) ? attempt : 1,
    events: events.map(readEvent),
  } as LeaseBatch;
}

/**
 * In place: the object is ours, fresh from JSON.parse, and the spec's sequence is already a string.
 * A copy per event doubled what a batch allocates and keeps alive while it is processed.
 */
function readEvent(value: unknown): CloudEvent {
  const raw = asRecord(value);
  if (raw === undefined) return value as CloudEvent;
  const sequence = raw.sequence;
  if (typeof sequence === 'number' || typeof sequence === 'bigint') raw.sequence = String(sequence);
  return raw as unknown as CloudEvent;
}

export function readAckResponse(body: unknown, status: number, path: string): AckResponse {
  const raw = asRecord(body);
  if (raw === undefined || typeof raw.status !== 'string') {
    throw malformed(status, path, 'an acknowledge response without status');
  }
  const committed = raw.committed;
  return {
    ...raw,
    status: raw.status as AckResponse['status'],
    committed: committed === null || committed === undefined ? null : String(committed),
  };
}

function asRecord(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

function malformed(status: number, path: string, what: string): ApiError {
  return new ApiError({ status, method: 'POST', path, message: `POST ${path} answered ${status} with ${what}` });
}
