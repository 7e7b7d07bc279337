import type { Credentials } from '../auth/credentials.js';
import { DEV_DEFAULTS } from '../config.js';
import type { EmulatorContext } from '../context.js';
import type { FaultInjector } from '../faults/injector.js';
import { readJson } from '../http/body.js';
import { HttpProblem } from '../http/problem.js';
import type { RouteReply } from '../http/router.js';
import { parseOrProblem } from '../http/validation.js';
import type { OperationSpec } from '../openapi/operation.js';
import { answer, noContent, pathParameter, problem, validation } from '../openapi/responses.js';
import type { Tenants } from '../tenants.js';
import {
  AppendedEventsSchema,
  ApplicationSchema,
  EmulatorStateSchema,
  EventDestinationSchema,
  FaultOptionsSchema,
  NewApplicationSchema,
  NewEventDestinationSchema,
  NewEventsSchema,
} from './schemas.js';

/**
 * Seeding endpoints under `/_emulator` (the `Emulator only` group of docs/openapi/platform-api.json):
 * loopback only (the server checks), no credential. They create what the spec gives no way to create.
 */

const admin = { tag: 'Emulator only', security: { kind: 'none' } } as const;
const tenant = { tenant: pathParameter('Tenant ID (created when absent).', 'dev-tenant') };

const NEW_DESTINATION: OperationSpec = {
  ...admin,
  method: 'POST',
  path: '/_emulator/tenants/{tenant}/event-destinations',
  operationId: 'seedEventDestination',
  summary: 'Create an event destination; a new durable consumer starts at the head of the stream.',
  pathParameters: tenant,
  requestBody: { schema: NewEventDestinationSchema, example: { id: 'my-consumer', type: 'DURABLE_CONSUMER' } },
  responses: {
    '201': answer('The destination.', EventDestinationSchema),
    '400': validation('Bad input; messages keyed by field.'),
    '409': problem('The tenant has a destination with this ID.'),
  },
};

const APPEND_EVENTS: OperationSpec = {
  ...admin,
  method: 'POST',
  path: '/_emulator/tenants/{tenant}/events',
  operationId: 'appendEvents',
  summary: 'Append raw events of any type to the tenant stream (1 to 10,000).',
  pathParameters: tenant,
  requestBody: { schema: NewEventsSchema, example: { events: [{ type: 'test.event', subject: 's-1', data: { n: 1 } }] } },
  responses: { '201': answer('Their IDs and sequences.', AppendedEventsSchema), '400': validation('Bad input; messages keyed by path.') },
};

const NEW_APPLICATION: OperationSpec = {
  ...admin,
  method: 'POST',
  path: '/_emulator/applications',
  operationId: 'seedApplication',
  summary: 'Register an application (client credentials) with scopes and sources.',
  requestBody: {
    schema: NewApplicationSchema,
    example: { clientId: 'importer', clientSecret: 'importer-secret', scopes: ['write:sources'], sources: ['products'] },
  },
  responses: {
    '201': answer('The application.', ApplicationSchema),
    '400': validation('Bad input; messages keyed by path.'),
    '409': problem('An application with this client ID exists.'),
  },
};

const STATE: OperationSpec = {
  ...admin,
  method: 'GET',
  path: '/_emulator/state',
  operationId: 'getEmulatorState',
  summary: 'A summary of the state: tenants, sources, consumers with head, committed and leased.',
  responses: { '200': answer('The state.', EmulatorStateSchema) },
};

const faultsPath = { ...admin, path: '/_emulator/faults' } as const;
const GET_FAULTS: OperationSpec = {
  ...faultsPath,
  method: 'GET',
  operationId: 'getFaults',
  summary: 'The faults in force.',
  responses: { '200': answer('The fault options.', FaultOptionsSchema) },
};
const SET_FAULTS: OperationSpec = {
  ...faultsPath,
  method: 'POST',
  operationId: 'setFaults',
  summary: 'Inject faults into the public routes: latency, errors, throttling, dropped connections.',
  requestBody: { schema: FaultOptionsSchema, example: { errorRate: 0.1, throttle: { rate: 0.05, retryAfterSeconds: 1 }, routes: ['pull', 'ack'] } },
  responses: { '200': answer('The fault options now in force.', FaultOptionsSchema), '400': validation('Bad options; messages keyed by path.') },
};
const CLEAR_FAULTS: OperationSpec = {
  ...faultsPath,
  method: 'DELETE',
  operationId: 'clearFaults',
  summary: 'Stop injecting faults.',
  responses: { '204': noContent('No fault any more.') },
};

export interface AdminDeps {
  tenants: Tenants;
  credentials: Credentials;
  faults: FaultInjector;
  state: () => unknown;
}

export function registerAdminRoutes(ctx: EmulatorContext, deps: AdminDeps): void {
  const { router } = ctx;

  router.add(NEW_DESTINATION, async ({ req, params }): Promise<RouteReply> => {
    const body = parseOrProblem(NewEventDestinationSchema, await readJson(req, ctx.maxBodyBytes));
    const tenant = deps.tenants.ensure(params.tenant!);
    const destination = tenant.addDestination(body.id, body.type);
    if (destination === undefined) throw new HttpProblem(409, `Event destination "${body.id}" already exists in tenant "${tenant.id}".`);
    return { status: 201, body: { tenant: tenant.id, id: destination.id, type: destination.type, paused: destination.paused } };
  });

  router.add(APPEND_EVENTS, async ({ req, params }): Promise<RouteReply> => {
    const body = parseOrProblem(NewEventsSchema, await readJson(req, ctx.maxBodyBytes));
    const appended = ctx.appendEvents(
      deps.tenants.ensure(params.tenant!).id,
      body.events.map((e) => ({ type: e.type, subject: e.subject, data: e.data ?? null })),
    );
    return { status: 201, body: { events: appended.map((e) => ({ id: e.id, sequence: e.sequence })) } };
  });

  router.add(NEW_APPLICATION, async ({ req }): Promise<RouteReply> => {
    const body = parseOrProblem(NewApplicationSchema, await readJson(req, ctx.maxBodyBytes));
    if (deps.credentials.hasApplication(body.clientId)) throw new HttpProblem(409, `Application "${body.clientId}" already exists.`);
    const tenant = deps.tenants.ensure(body.tenant ?? DEV_DEFAULTS.tenant);
    const application = deps.credentials.addApplication({
      tenant: tenant.id,
      clientId: body.clientId,
      clientSecret: body.clientSecret,
      scopes: body.scopes,
      sources: body.sources ?? 'all',
      dataProvider: body.dataProvider ?? false,
      redirectUris: body.redirectUris ?? [],
    });
    // The secret is not echoed back.
    const sources = application.sources === 'all' ? 'all' : [...application.sources];
    return {
      status: 201,
      body: {
        tenant: tenant.id,
        clientId: application.clientId,
        scopes: [...application.scopes],
        sources,
        dataProvider: application.dataProvider,
        redirectUris: [...application.redirectUris],
      },
    };
  });

  router.add(STATE, (): RouteReply => ({ status: 200, body: deps.state() }));

  router.add(GET_FAULTS, (): RouteReply => ({ status: 200, body: deps.faults.current() }));
  router.add(SET_FAULTS, async ({ req }): Promise<RouteReply> => {
    const body = parseOrProblem(FaultOptionsSchema, await readJson(req, ctx.maxBodyBytes));
    deps.faults.set(body);
    return { status: 200, body: deps.faults.current() };
  });
  router.add(CLEAR_FAULTS, (): RouteReply => {
    deps.faults.clear();
    return { status: 204 };
  });
}
