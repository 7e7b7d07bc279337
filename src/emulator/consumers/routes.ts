import * as z from 'zod';
import type { AckResponse } from '../../types.js';
import type { EmulatorContext } from '../context.js';
import { readJson } from '../http/body.js';
import { HttpProblem, validationProblem } from '../http/problem.js';
import type { RouteReply } from '../http/router.js';
import { parseOrProblem } from '../http/validation.js';
import type { Destination, Tenants } from '../tenants.js';
import type { PullRequest } from './durable-consumer.js';

/**
 * Spec, Authentication rule 9: "Durable consumer pull and acknowledge require scope read:events".
 * The audience table's `read:events:pull` ("Pull events and inspect metadata") and
 * `read:events:sse` name the cursor-based pull and the SSE stream ("not shown"), beside
 * `read:events` for "Every events transport": a token with only `read:events:pull` gets 403 here.
 */
const CONSUMER_SCOPES = ['read:events'] as const;

/** Spec, Limits: pull `limit` default 20 (1..100), `visibility` default 60 (1..600 s), workerId up to 200 characters. */
const LIMIT = { name: 'limit', fallback: 20, min: 1, max: 100 } as const;
const VISIBILITY = { name: 'visibility', fallback: 60, min: 1, max: 600 } as const;
const WORKER_ID_MAX_LENGTH = 200;

const ackBodySchema = z.object({
  leaseId: z.string().min(1, 'leaseId is required.'),
  generation: z.number().int('generation must be an integer.').min(1, 'generation must be at least 1.'),
  status: z.enum(['ok', 'failed'], 'status must be "ok" or "failed".'),
});

function intParam(query: URLSearchParams, spec: { name: string; fallback: number; min: number; max: number }, errors: Record<string, string[]>): number {
  const values = query.getAll(spec.name);
  if (values.length === 0) return spec.fallback;
  const raw = values[0]!;
  const range = `an integer from ${spec.min} to ${spec.max}`;
  if (values.length > 1) errors[spec.name] = [`${spec.name} must be given once.`];
  else if (!/^[+-]?\d{1,15}$/.test(raw)) errors[spec.name] = [`${spec.name} must be ${range} (got "${raw.slice(0, 40)}").`];
  else {
    const value = Number(raw);
    if (value < spec.min || value > spec.max) errors[spec.name] = [`${spec.name} must be ${range} (got ${value}).`];
    else return value;
  }
  return spec.fallback;
}

/** Validates the pull query; every bad parameter is reported at once, keyed by its name. */
export function parsePullQuery(query: URLSearchParams): PullRequest {
  const errors: Record<string, string[]> = {};
  const limit = intParam(query, LIMIT, errors);
  const visibilitySeconds = intParam(query, VISIBILITY, errors);
  const workerIds = query.getAll('workerId');
  let workerId: string | undefined;
  if (workerIds.length > 1) errors.workerId = ['workerId must be given once.'];
  else if (workerIds.length === 1) {
    workerId = workerIds[0]!;
    if (workerId.length === 0 || workerId.length > WORKER_ID_MAX_LENGTH) {
      errors.workerId = [`workerId must be 1 to ${WORKER_ID_MAX_LENGTH} characters (got ${workerId.length}).`];
    }
  }
  if (Object.keys(errors).length > 0) throw validationProblem(errors);
  return { limit, visibilitySeconds, workerId };
}

function findDestination(tenants: Tenants, tenant: string, id: string): Destination {
  const destination = tenants.get(tenant)?.destinations.get(id);
  if (destination === undefined) throw new HttpProblem(404, `Event destination "${id}" does not exist.`);
  return destination;
}

function durableConsumer(destination: Destination) {
  // Spec: "{id} is the ID of an event destination of type DURABLE_CONSUMER; other destination types return 400".
  if (destination.consumer === undefined) {
    throw new HttpProblem(400, `Event destination "${destination.id}" is of type ${destination.type}, not DURABLE_CONSUMER.`);
  }
  return destination.consumer;
}

/** Pull, acknowledge, pause and resume of durable consumers. */
export function registerConsumerRoutes(ctx: EmulatorContext, tenants: Tenants, now: () => number = Date.now): void {
  ctx.router.add('POST', '/v1/event-destinations/:id/pull', ({ req, res, params, query }): RouteReply | void => {
    const principal = ctx.authenticate(req, CONSUMER_SCOPES);
    const request = parsePullQuery(query);
    const consumer = durableConsumer(findDestination(tenants, principal.tenant, params.id!));
    const result = consumer.pull(request, now());
    switch (result.kind) {
      case 'lease': {
        // The lease batch (LeaseBatch) assembled from the events' stored JSON texts.
        const { leaseId, generation, attempt, eventsJson } = result.lease;
        const text = `{"leaseId":${JSON.stringify(leaseId)},"generation":${generation},"attempt":${attempt},"events":[${eventsJson.join(',')}]}`;
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
        res.end(text);
        return;
      }
      case 'caught-up':
        return { status: 204 };
      case 'paused':
        throw new HttpProblem(409, `Event destination "${params.id}" is paused.`);
      case 'full':
        throw new HttpProblem(429, 'The consumer has 1,000 events leased and unacknowledged.', undefined, {
          'retry-after': String(result.retryAfterSeconds),
        });
    }
  });

  ctx.router.add('POST', '/v1/event-destinations/:id/acknowledge', async ({ req, params }): Promise<RouteReply> => {
    const principal = ctx.authenticate(req, CONSUMER_SCOPES);
    const ack = parseOrProblem(ackBodySchema, await readJson(req, ctx.maxBodyBytes));
    const destination = findDestination(tenants, principal.tenant, params.id!);
    const consumer = durableConsumer(destination);
    const result = consumer.acknowledge(ack.leaseId, ack.generation, ack.status, now());
    // Decision: a lease id this consumer never issued is 404 (a client bug or another emulator run);
    // a lease that existed but moved on is `stale`, as the spec's table says.
    if (result.kind === 'unknown-lease') throw new HttpProblem(404, `Lease "${ack.leaseId.slice(0, 100)}" does not exist for "${destination.id}".`);
    if (result.status === 'committed') tenants.get(principal.tenant)?.trim();
    const body: AckResponse = { status: result.status, committed: result.committed };
    return { status: 200, body };
  });

  // Spec: "Creating, listing, pausing or resuming event destinations: not shown". Decision: POST
  // without a body, scope read:events, answers 200 {id, type, paused}; idempotent.
  for (const action of ['pause', 'resume'] as const) {
    ctx.router.add('POST', `/v1/event-destinations/:id/${action}`, ({ req, params }): RouteReply => {
      const principal = ctx.authenticate(req, CONSUMER_SCOPES);
      const destination = findDestination(tenants, principal.tenant, params.id!);
      destination.paused = action === 'pause';
      destination.consumer?.setPaused(destination.paused);
      return { status: 200, body: { id: destination.id, type: destination.type, paused: destination.paused } };
    });
  }
}
