import * as z from 'zod';
import type { AckResponse as AckAnswer } from '../../types.js';
import type { EmulatorContext } from '../context.js';
import { readJson } from '../http/body.js';
import { HttpProblem } from '../http/problem.js';
import { intParameter, parseQuery } from '../http/query.js';
import type { RouteReply } from '../http/router.js';
import { parseOrProblem } from '../http/validation.js';
import type { OperationSpec } from '../openapi/operation.js';
import { answer, noContent, pathParameter, problem, rateLimited, validation } from '../openapi/responses.js';
import type { Destination, Tenants } from '../tenants.js';
import type { PullRequest } from './durable-consumer.js';
import { AckRequest, AckResponse, ConsumerState, LeaseBatch } from './schemas.js';

/**
 * Spec, Authentication rule 9: "Durable consumer pull and acknowledge require scope read:events".
 * The audience table's `read:events:pull` ("Pull events and inspect metadata") and
 * `read:events:sse` name the cursor-based pull and the SSE stream ("not shown"), beside
 * `read:events` for "Every events transport": a token with only `read:events:pull` gets 403 here.
 */
const CONSUMER_SCOPES = ['read:events'] as const;

/** Spec, Limits: pull `limit` default 20 (1..100), `visibility` default 60 (1..600 s), workerId up to 200 characters. */
const WORKER_ID_MAX_LENGTH = 200;
const PULL_QUERY = {
  limit: { schema: intParameter('limit', 1, 100).optional().meta({ default: 20 }), description: 'Maximum events in the batch.' },
  visibility: {
    schema: intParameter('visibility', 1, 600).optional().meta({ default: 60 }),
    description: 'Lease duration in seconds before expiry and redelivery.',
  },
  workerId: {
    schema: z
      .string()
      .min(1, 'workerId must be 1 to 200 characters.')
      .max(WORKER_ID_MAX_LENGTH, `workerId must be 1 to ${WORKER_ID_MAX_LENGTH} characters.`)
      .optional(),
    description: 'Worker instance identity; pulls without it share one identity (a pull by the holder of a lease returns the same lease).',
    example: 'worker-1',
  },
};

/** Validates the pull query; every bad parameter is reported at once, keyed by its name. */
export function parsePullQuery(query: URLSearchParams): PullRequest {
  const { limit, visibility, workerId } = parseQuery(PULL_QUERY, query);
  return { limit: limit ?? 20, visibilitySeconds: visibility ?? 60, workerId };
}

const destinationId = { id: pathParameter('ID of an event destination of the tenant.', 'dev-consumer') };
const unknownDestination = problem('No event destination with this ID in the tenant of the credential.');
const consumer = { tag: 'Durable consumers', security: { kind: 'tenant', scopes: CONSUMER_SCOPES }, pathParameters: destinationId } as const;

const PULL: OperationSpec = {
  ...consumer,
  method: 'POST',
  path: '/v1/event-destinations/{id}/pull',
  operationId: 'pullBatch',
  summary: 'Pull a leased batch from a durable consumer.',
  description:
    'Expired and failed leases are redelivered before new work, with a higher `generation`. Pulling again before acknowledging abandons the earlier batch of the same worker.',
  query: PULL_QUERY,
  responses: {
    '200': answer('A lease batch.', LeaseBatch),
    '204': noContent('Caught up: no event to lease.'),
    '400': problem('A bad parameter (`errors` keyed by its name), or a destination that is not a `DURABLE_CONSUMER`.'),
    '404': unknownDestination,
    '409': problem('The consumer is paused.'),
    '429': rateLimited('1,000 events are leased and unacknowledged (or an injected fault).'),
  },
};

const ACKNOWLEDGE: OperationSpec = {
  ...consumer,
  method: 'POST',
  path: '/v1/event-destinations/{id}/acknowledge',
  operationId: 'acknowledgeBatch',
  summary: 'Acknowledge a leased batch `ok` or `failed`.',
  description: 'Allowed while the consumer is paused. An acknowledgement of an older generation is `stale`; nothing is committed.',
  requestBody: { schema: AckRequest, example: { leaseId: 'l-1', generation: 1, status: 'ok' } },
  responses: {
    '200': answer('The outcome and the committed cursor.', AckResponse, { status: 'committed', committed: '42' }),
    '400': problem('A bad body (`errors` keyed by field), or a destination that is not a `DURABLE_CONSUMER`.'),
    '404': problem("No such destination, or a lease ID this consumer never issued (the emulator's choice)."),
  },
};

const pauseOperation = (action: 'pause' | 'resume'): OperationSpec => ({
  ...consumer,
  method: 'POST',
  path: `/v1/event-destinations/{id}/${action}`,
  operationId: `${action}Destination`,
  summary: action === 'pause' ? 'Pause an event destination: pulls answer 409.' : 'Resume a paused event destination.',
  description: 'The spec does not show this operation ("not shown"): the emulator\'s choice, idempotent, no body.',
  responses: {
    '200': answer('The destination after the change.', ConsumerState, { id: 'dev-consumer', type: 'DURABLE_CONSUMER', paused: action === 'pause' }),
    '404': unknownDestination,
  },
});

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
  ctx.router.add(PULL, ({ req, params, query }): RouteReply => {
    const principal = ctx.authenticate(req, CONSUMER_SCOPES);
    const request = parsePullQuery(query);
    const consumer = durableConsumer(findDestination(tenants, principal.tenant, params.id!));
    const result = consumer.pull(request, now());
    switch (result.kind) {
      case 'lease': {
        // The lease batch (LeaseBatch) assembled from the events' stored JSON texts.
        const { leaseId, generation, attempt, eventsJson } = result.lease;
        return {
          status: 200,
          json: `{"leaseId":${JSON.stringify(leaseId)},"generation":${generation},"attempt":${attempt},"events":[${eventsJson.join(',')}]}`,
        };
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

  ctx.router.add(ACKNOWLEDGE, async ({ req, params }): Promise<RouteReply> => {
    const principal = ctx.authenticate(req, CONSUMER_SCOPES);
    const ack = parseOrProblem(AckRequest, await readJson(req, ctx.maxBodyBytes));
    const destination = findDestination(tenants, principal.tenant, params.id!);
    const consumer = durableConsumer(destination);
    const result = consumer.acknowledge(ack.leaseId, ack.generation, ack.status, now());
    // Decision: a lease id this consumer never issued is 404 (a client bug or another emulator run);
    // a lease that existed but moved on is `stale`, as the spec's table says.
    if (result.kind === 'unknown-lease') throw new HttpProblem(404, `Lease "${ack.leaseId.slice(0, 100)}" does not exist for "${destination.id}".`);
    if (result.status === 'committed') tenants.get(principal.tenant)?.trim();
    const body: AckAnswer = { status: result.status, committed: result.committed };
    return { status: 200, body };
  });

  // Spec: "Creating, listing, pausing or resuming event destinations: not shown". Decision: POST
  // without a body, scope read:events, answers 200 {id, type, paused}; idempotent.
  for (const action of ['pause', 'resume'] as const) {
    ctx.router.add(pauseOperation(action), ({ req, params }): RouteReply => {
      const principal = ctx.authenticate(req, CONSUMER_SCOPES);
      const destination = findDestination(tenants, principal.tenant, params.id!);
      destination.paused = action === 'pause';
      destination.consumer?.setPaused(destination.paused);
      return { status: 200, body: { id: destination.id, type: destination.type, paused: destination.paused } };
    });
  }
}
