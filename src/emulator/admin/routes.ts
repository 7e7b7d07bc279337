import * as z from 'zod';
import type { Credentials } from '../auth/credentials.js';
import { ALL_SCOPES, DESTINATION_TYPES, DEV_DEFAULTS } from '../config.js';
import type { EmulatorContext } from '../context.js';
import type { FaultInjector } from '../faults/injector.js';
import { faultOptionsSchema } from '../faults/options.js';
import { readJson } from '../http/body.js';
import { HttpProblem } from '../http/problem.js';
import type { RouteReply } from '../http/router.js';
import { parseOrProblem } from '../http/validation.js';
import type { Tenants } from '../tenants.js';

/**
 * Seeding endpoints under `/_emulator` (CONTRACT "Emulator seeding endpoints"): loopback only (the
 * server checks), no credential. They create what the spec gives no way to create.
 */

const id = z.string().min(1).max(200);

const destinationBody = z.object({ id, type: z.enum(DESTINATION_TYPES) });

const applicationBody = z.object({
  tenant: id.optional(),
  clientId: id,
  clientSecret: z.string().min(1),
  scopes: z.array(z.enum(ALL_SCOPES)),
  sources: z.union([z.literal('all'), z.array(id)]).optional(),
  dataProvider: z.boolean().optional(),
});

/** Not in CONTRACT: appends raw events to a tenant stream, for tests of workers without ingest. */
const eventsBody = z.object({
  events: z.array(z.object({ type: z.string().min(1), subject: z.string(), data: z.unknown() })).min(1).max(10_000),
});

export interface AdminDeps {
  tenants: Tenants;
  credentials: Credentials;
  faults: FaultInjector;
  state: () => unknown;
}

export function registerAdminRoutes(ctx: EmulatorContext, deps: AdminDeps): void {
  const { router } = ctx;

  router.add('POST', '/_emulator/tenants/:tenant/event-destinations', async ({ req, params }): Promise<RouteReply> => {
    const body = parseOrProblem(destinationBody, await readJson(req, ctx.maxBodyBytes));
    const tenant = deps.tenants.ensure(params.tenant!);
    const destination = tenant.addDestination(body.id, body.type);
    if (destination === undefined) throw new HttpProblem(409, `Event destination "${body.id}" already exists in tenant "${tenant.id}".`);
    return { status: 201, body: { tenant: tenant.id, id: destination.id, type: destination.type, paused: destination.paused } };
  });

  router.add('POST', '/_emulator/tenants/:tenant/events', async ({ req, params }): Promise<RouteReply> => {
    const body = parseOrProblem(eventsBody, await readJson(req, ctx.maxBodyBytes));
    const appended = ctx.appendEvents(deps.tenants.ensure(params.tenant!).id, body.events.map((e) => ({ type: e.type, subject: e.subject, data: e.data ?? null })));
    return { status: 201, body: { events: appended.map((e) => ({ id: e.id, sequence: e.sequence })) } };
  });

  router.add('POST', '/_emulator/applications', async ({ req }): Promise<RouteReply> => {
    const body = parseOrProblem(applicationBody, await readJson(req, ctx.maxBodyBytes));
    if (deps.credentials.hasApplication(body.clientId)) throw new HttpProblem(409, `Application "${body.clientId}" already exists.`);
    const tenant = deps.tenants.ensure(body.tenant ?? DEV_DEFAULTS.tenant);
    const application = deps.credentials.addApplication({
      tenant: tenant.id,
      clientId: body.clientId,
      clientSecret: body.clientSecret,
      scopes: body.scopes,
      sources: body.sources ?? 'all',
      dataProvider: body.dataProvider ?? false,
    });
    // The secret is not echoed back.
    const sources = application.sources === 'all' ? 'all' : [...application.sources];
    return { status: 201, body: { tenant: tenant.id, clientId: application.clientId, scopes: [...application.scopes], sources, dataProvider: application.dataProvider } };
  });

  router.add('GET', '/_emulator/state', (): RouteReply => ({ status: 200, body: deps.state() }));

  router.add('GET', '/_emulator/faults', (): RouteReply => ({ status: 200, body: deps.faults.current() }));
  router.add('POST', '/_emulator/faults', async ({ req }): Promise<RouteReply> => {
    const body = parseOrProblem(faultOptionsSchema, await readJson(req, ctx.maxBodyBytes));
    deps.faults.set(body);
    return { status: 200, body: deps.faults.current() };
  });
  router.add('DELETE', '/_emulator/faults', (): RouteReply => {
    deps.faults.clear();
    return { status: 204 };
  });
}

/**
 * Later features (managed tags, card definitions, destination query APIs) register these routes in
 * their own modules. Registered last, so a module registered earlier wins; until then they answer
 * 501 rather than a misleading 404.
 */
export function registerNotYetImplemented(ctx: EmulatorContext): void {
  const later = ['/_emulator/tenants/:tenant/managed-tags', '/_emulator/tenants/:tenant/card-definitions', '/_emulator/destinations'];
  for (const pattern of later) {
    ctx.router.add('POST', pattern, ({ req }) => {
      req.resume();
      throw new HttpProblem(501, `${pattern} is not implemented yet in this emulator.`);
    });
  }
}
