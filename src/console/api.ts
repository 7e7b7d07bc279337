import type { IncomingMessage } from 'node:http';
import * as z from 'zod';
import { DEAD_LETTER_STATES } from '../dead-letter/sink.js';
import type { FaultOptions } from '../emulator/faults/options.js';
import { readJson } from '../emulator/http/body.js';
import { HttpProblem } from '../emulator/http/problem.js';
import { parseOrProblem } from '../emulator/http/validation.js';
import type { ConsumerWatch } from './consumer-watch.js';
import type { DeadLetterDesk } from './dead-letter-desk.js';
import type { DeferredDesk } from './deferred-desk.js';
import type { EmulatorControl } from './emulator-control.js';
import type { LimitsDesk } from './limits-desk.js';
import type { ConsoleFeed } from './feed.js';
import type { Hello, ReloadView } from './protocol.js';

/** What the routes of `/api` work with. */
export interface ApiDeps {
  hello: Hello;
  feed: ConsoleFeed;
  watch: ConsumerWatch;
  control: EmulatorControl;
  deadLetters: DeadLetterDesk;
  deferred: DeferredDesk;
  limits: LimitsDesk;
  /** The last reload of the handlers after a save, if any. */
  reload?: () => ReloadView | undefined;
}

export interface ApiRequest {
  req: IncomingMessage;
  params: string[];
  query: URLSearchParams;
}

export interface ApiRoute {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: RegExp;
  handle(request: ApiRequest): Promise<{ status: number; body?: unknown }>;
}

/** The fault fields the Consumer page manages; `null` removes one (e.g. errorRoutes: every route again). */
const FaultChangeSchema = z.strictObject({
  errorRate: z.unknown().optional(),
  errorStatus: z.unknown().optional(),
  errorRoutes: z.unknown().optional(),
  latencyMs: z.unknown().optional(),
  latencyRoutes: z.unknown().optional(),
});

const IdsSchema = z.strictObject({ ids: z.array(z.string().min(1)).min(1, 'select at least one record').max(1_000) });

/** The entries go to the emulator as they are: its validation errors are what the page shows. */
const SendSchema = z.strictObject({ sourceId: z.string().min(1, 'a source ID is required').max(200), entries: z.unknown() });

const StateQuery = z.enum([...DEAD_LETTER_STATES, 'all']).optional();
const LimitQuery = z.coerce.number().int().min(1).max(1_000).optional();

const ok = (body: unknown) => ({ status: 200, body });

/** The console's JSON API, for its page. Every refusal is problem+json with `errors` keyed by path. */
export function apiRoutes(deps: ApiDeps): ApiRoute[] {
  const { feed, watch, control, deadLetters, deferred } = deps;
  const route = (method: ApiRoute['method'], path: RegExp, handle: ApiRoute['handle']): ApiRoute => ({ method, path, handle });
  const afterChange = async () => ok({ consumer: await watch.sample() });

  return [
    route('GET', /^\/api\/info$/, async () => ok(deps.hello)),
    route('GET', /^\/api\/reload$/, async () => ok(deps.reload?.() ?? null)),
    route('GET', /^\/api\/events$/, async () => ok(feed.list())),
    route('GET', /^\/api\/events\/([^/]+)$/, async ({ params }) => {
      const detail = feed.get(params[0]!);
      if (detail === undefined) throw new HttpProblem(404, `no event ${params[0]} among the last ${feed.maxEvents} the console keeps`);
      return ok(detail);
    }),
    route('GET', /^\/api\/consumer$/, async () => ok({ consumer: watch.latest, lag: watch.history })),
    route('POST', /^\/api\/consumer\/(pause|resume)$/, async ({ req, params }) => {
      await readJson(req);
      await control.setPaused(params[0] === 'pause');
      return afterChange();
    }),
    route('GET', /^\/api\/faults$/, async () => ok(await control.faults())),
    route('PUT', /^\/api\/faults$/, async ({ req }) => {
      const change = parseOrProblem(FaultChangeSchema, await readJson(req));
      const faults: Record<string, unknown> = { ...(await control.faults()) };
      for (const [key, value] of Object.entries(change)) {
        if (value === null) delete faults[key];
        else if (value !== undefined) faults[key] = value;
      }
      await control.setFaults(faults as FaultOptions);
      return afterChange();
    }),
    route('DELETE', /^\/api\/faults$/, async () => {
      await control.clearFaults();
      return afterChange();
    }),
    route('GET', /^\/api\/dead-letters$/, async ({ query }) => {
      const state = parseOrProblem(StateQuery, query.get('state') ?? undefined);
      const limit = parseOrProblem(LimitQuery, query.get('limit') ?? undefined);
      return ok(
        await deadLetters.list({ state: state === 'all' ? undefined : (state ?? 'dead'), after: query.get('after') ?? undefined, limit: limit ?? 100 }),
      );
    }),
    route('GET', /^\/api\/dead-letters\/(.+)$/, async ({ params }) => {
      const record = await deadLetters.get(params[0]!);
      if (record === undefined) throw new HttpProblem(404, `no dead-letter record ${params[0]}`);
      return ok(record);
    }),
    route('POST', /^\/api\/dead-letters\/replay$/, async ({ req }) => {
      const { ids } = parseOrProblem(IdsSchema, await readJson(req));
      const report = await deadLetters.replay(ids);
      return ok({
        ok: report.ok,
        results: report.results.map(({ id, handler, eventId, outcome, error }) => ({
          id,
          handler,
          eventId,
          outcome,
          ...(error === undefined ? {} : { error }),
        })),
      });
    }),
    route('POST', /^\/api\/dead-letters\/purge$/, async ({ req }) => {
      const { ids } = parseOrProblem(IdsSchema, await readJson(req));
      return ok({ purged: (await deadLetters.purge(ids)).map((record) => record.id) });
    }),
    route('GET', /^\/api\/deferred$/, async ({ query }) => ok(await deferred.list(parseOrProblem(LimitQuery, query.get('limit') ?? undefined) ?? 200))),
    route('GET', /^\/api\/limits$/, async () => ok(await deps.limits.read())),
    route('POST', /^\/api\/send$/, async ({ req }) => {
      const { sourceId, entries } = parseOrProblem(SendSchema, await readJson(req));
      return { status: 202, body: await control.ingest(sourceId, { entries } as Parameters<EmulatorControl['ingest']>[1]) };
    }),
  ];
}
