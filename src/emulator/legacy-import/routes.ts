import { randomUUID } from 'node:crypto';
import { legacyImportAcceptedSchema, legacyImportVerifiedSchema } from '../../ingest/response-schema.js';
import type { LegacyImportAccepted, LegacyImportVerified } from '../../types.js';
import type { EmulatorContext, Principal } from '../context.js';
import { readJson } from '../http/body.js';
import { HttpProblem } from '../http/problem.js';
import { RateWindow } from '../http/rate-window.js';
import { component } from '../openapi/components.js';
import type { OperationSpec } from '../openapi/operation.js';
import { answer, pathParameter, problem, rateLimited, validation } from '../openapi/responses.js';
import { LegacyImportRequestSchema, validateLegacyImport, type LegacyImportEntry } from './validate.js';

export type { LegacyImportAccepted, LegacyImportVerified };

/** Spec Authentication rule 4: legacy import accepts either permission. */
export const LEGACY_IMPORT_SCOPES = ['import-datasource', 'write:sources'] as const;
/** The spec gives no number for the import request-rate budget; ours, per tenant, is configurable. */
export const DEFAULT_IMPORT_REQUESTS_PER_MINUTE = 600;

const LegacyImportAcceptedSchema = component('LegacyImportAccepted', legacyImportAcceptedSchema);
const LegacyImportVerifiedSchema = component('LegacyImportVerified', legacyImportVerifiedSchema);

const legacy = {
  tag: 'Ingest',
  security: { kind: 'tenant', scopes: LEGACY_IMPORT_SCOPES },
  pathParameters: { dataSource: pathParameter('Source ID.', 'products') },
  requestBody: { schema: LegacyImportRequestSchema, example: { entries: [{ id: 'product-1', properties: { title: 'Kettle', price: '25.5' } }] } },
} as const;
const legacyErrors = {
  '400': validation('Invalid input, for verify and import alike; messages keyed by request path.'),
  '403': problem('Neither `import-datasource` nor `write:sources`, or the source is not granted (data providers reach their assigned sources only).'),
  '404': problem(
    'Unknown source, when the emulator does not create sources on first ingest (config `autoCreateSources: false`; the development default creates them, as typed ingest does).',
  ),
};

const VERIFY: OperationSpec = {
  ...legacy,
  method: 'POST',
  path: '/datasources/{dataSource}/import/verify',
  operationId: 'verifyLegacyImport',
  summary: 'Validate a legacy import without queueing it or spending rate budget.',
  description: "Request and answer shapes are not shown by the spec: the emulator's choices (docs/client.md).",
  responses: { '200': answer('Valid; nothing queued.', LegacyImportVerifiedSchema, { dataSource: 'products', valid: true, entryCount: 1 }), ...legacyErrors },
};

const IMPORT: OperationSpec = {
  ...legacy,
  method: 'POST',
  path: '/datasources/{dataSource}/import',
  operationId: 'legacyImport',
  summary: 'Queue a legacy import.',
  description:
    "Request and answer shapes are not shown by the spec: the emulator's choices (docs/client.md). Each entry emits `source_entry.updated` once applied.",
  responses: {
    '202': answer('Accepted for asynchronous processing.', LegacyImportAcceptedSchema),
    ...legacyErrors,
    '429': rateLimited("The tenant's import request rate is spent (`importRequestsPerMinute`, default 600), or an injected fault."),
  },
};

export interface LegacyImportDeps {
  /** Queues validated entries for asynchronous ingest into the source (wired to the sources module). */
  enqueueImport(tenant: string, dataSource: string, entries: LegacyImportEntry[]): void | Promise<void>;
  /** Whether the source exists; unknown sources answer 404. Default: every source exists (development auto-create). */
  sourceExists?(tenant: string, dataSource: string): boolean;
  /** Import requests per minute per tenant before 429 (verify never counts). Default 600. */
  importRequestsPerMinute?: number;
  /** The budget of one tenant (emulator config `ingestLimits.importRequestsPerMinute`); wins over `importRequestsPerMinute`. */
  importRequestsPerMinuteFor?: (tenant: string) => number | undefined;
  /** Clock of the rate window, epoch ms. Default `Date.now`. */
  nowMs?: () => number;
}

/**
 * Spec: Legacy import operations. `POST /datasources/{dataSource}/import/verify` validates without
 * queueing and without consuming the request-rate budget; `POST /datasources/{dataSource}/import`
 * answers `202` when queued. Invalid input is a `400` validation problem for both.
 */
export function registerLegacyImportRoutes(ctx: EmulatorContext, deps: LegacyImportDeps): void {
  const nowMs = deps.nowMs ?? Date.now;
  const window = new RateWindow(60_000, nowMs);
  const perMinuteOf = (tenant: string): number =>
    deps.importRequestsPerMinuteFor?.(tenant) ?? deps.importRequestsPerMinute ?? DEFAULT_IMPORT_REQUESTS_PER_MINUTE;

  const admit = (tenant: string, req: { resume(): unknown }): void => {
    try {
      window.admit(tenant, perMinuteOf(tenant), (n) => `Import request rate above ${n} per minute for this tenant.`);
    } catch (err) {
      req.resume();
      throw err;
    }
  };

  const prepare = async (principal: Principal, dataSource: string, req: Parameters<typeof readJson>[0]) => {
    // Spec Authentication rule 5: data-provider (and source-restricted) credentials reach only their sources.
    if (principal.sources !== 'all' && !principal.sources.has(dataSource)) {
      req.resume();
      throw new HttpProblem(403, `This credential is not granted access to source ${dataSource}.`);
    }
    if (deps.sourceExists && !deps.sourceExists(principal.tenant, dataSource)) {
      req.resume();
      throw new HttpProblem(404, `Source ${dataSource} does not exist.`);
    }
    const { request, errors } = validateLegacyImport(await readJson(req, ctx.maxBodyBytes));
    if (!request) throw new HttpProblem(400, 'One or more validation errors occurred.', errors);
    return request;
  };

  ctx.router.add(VERIFY, async ({ req, params }) => {
    const principal = ctx.authenticate(req, LEGACY_IMPORT_SCOPES);
    const request = await prepare(principal, params.dataSource!, req);
    const body: LegacyImportVerified = { dataSource: params.dataSource!, valid: true, entryCount: request.entries.length };
    return { status: 200, body };
  });

  ctx.router.add(IMPORT, async ({ req, params }) => {
    const principal = ctx.authenticate(req, LEGACY_IMPORT_SCOPES);
    admit(principal.tenant, req);
    const request = await prepare(principal, params.dataSource!, req);
    await deps.enqueueImport(principal.tenant, params.dataSource!, request.entries);
    const body: LegacyImportAccepted = {
      correlationId: randomUUID(),
      dataSource: params.dataSource!,
      acceptedAt: new Date(nowMs()).toISOString(),
      acceptedEntryCount: request.entries.length,
    };
    return { status: 202, body };
  });
}
