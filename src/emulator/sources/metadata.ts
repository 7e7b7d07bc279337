import * as z from 'zod';
import { canonicalPropertyId, DEFAULT_LIST_DELIMITER, PROPERTY_ID_JSON_SCHEMA, propertyIdProblem } from '../../ingest/index.js';
import type { Source as SourceAnswer, SourceProperty as SourcePropertyAnswer } from '../../types.js';
import type { EmulatorContext } from '../context.js';
import { readJson } from '../http/body.js';
import { validationProblem } from '../http/problem.js';
import { parseOrProblem } from '../http/validation.js';
import type { OperationSpec } from '../openapi/operation.js';
import { answer, pathParameter, problem, validation } from '../openapi/responses.js';
import { authorizeMetadata, WRITE_SOURCES } from './access.js';
import { requireSource } from './reads.js';
import { Source, SourceProperty, SourcePropertyUpdate, SourceUpdate } from './schemas.js';
import { newPropertyRecord, nowIso, toSourceProperty, type SourceStore } from './store.js';

/**
 * `PUT /v1/sources/{sourceId}/properties/{propertyId}` and `PATCH /v1/sources/{sourceId}` (spec:
 * Create or update a source property; Update source metadata). Null or omitted fields preserve
 * current values; an empty `description` clears it.
 *
 * Choices where the spec is silent:
 * - No PUT field is required, also when creating: displayName defaults to the property ID,
 *   description to '', delimiter to ','. An empty displayName or delimiter is a 400.
 * - `type` is accepted as an extension of the PUT body (the spec's body has none, yet says "a type
 *   change may trigger asynchronous reindexing"): a changed type answers with state `Updating`,
 *   which becomes `Active` once the reindex job has run on the apply queue. Stored values are not
 *   converted: a value the new type cannot represent makes reads answer 409.
 * - An unknown source answers 404 for both (only typed ingest creates sources).
 * - An empty `name` is a 400: a source keeps a name.
 */

const metadata = { tag: 'Sources', security: { kind: 'tenant', scopes: [WRITE_SOURCES] } } as const;
const sourceId = pathParameter('Customer-facing source ID within the tenant.', 'products');
const forbidden = problem('No `write:sources` scope, a data-provider credential, or the source is not granted.');

const PUT_PROPERTY: OperationSpec = {
  ...metadata,
  method: 'PUT',
  path: '/v1/sources/{sourceId}/properties/{propertyId}',
  operationId: 'putSourceProperty',
  summary: 'Create or update a source property.',
  description:
    "Null or omitted fields preserve current values; an empty `description` clears it. Required permission and which fields are required are not shown by the spec: `write:sources` and none (the emulator's choices).",
  pathParameters: {
    sourceId,
    propertyId: {
      ...pathParameter('Property ID; matched case-insensitively, stored in lowercase.', 'price'),
      schema: z
        .string()
        .min(1)
        .meta({ ...PROPERTY_ID_JSON_SCHEMA }),
    },
  },
  requestBody: { schema: SourcePropertyUpdate, example: { displayName: 'Price', description: 'Price in EUR' } },
  responses: {
    '200': answer('The property after the change.', SourceProperty),
    '400': validation('A bad body or property ID; messages keyed by request path (`propertyId` for the path).'),
    '403': forbidden,
    '404': problem('Unknown source (only typed ingest creates sources).'),
  },
};

const PATCH_SOURCE: OperationSpec = {
  ...metadata,
  method: 'PATCH',
  path: '/v1/sources/{sourceId}',
  operationId: 'patchSource',
  summary: 'Update source metadata.',
  description: 'Omitted or null fields remain unchanged; an empty `description` clears it; an empty `name` is refused.',
  pathParameters: { sourceId },
  requestBody: { schema: SourceUpdate, example: { name: 'Products', description: 'The product catalogue' } },
  responses: {
    '200': answer('The source after the change.', Source),
    '400': validation('A bad body; messages keyed by request path.'),
    '403': forbidden,
    '404': problem('Unknown source (only typed ingest creates sources).'),
  },
};

export interface MetadataDeps {
  store: SourceStore;
  /** Runs `job` on the apply queue, after every batch accepted before it. */
  reindexLater(job: () => void): void;
}

export function registerMetadataRoutes(ctx: EmulatorContext, deps: MetadataDeps): void {
  ctx.router.add(PUT_PROPERTY, async ({ req, params }) => {
    const sourceId = params.sourceId!;
    const principal = authorizeMetadata(ctx, req, sourceId);
    const rawId = params.propertyId!;
    const idProblem = propertyIdProblem(rawId);
    if (idProblem) {
      req.resume();
      throw validationProblem({ propertyId: [idProblem] });
    }
    const record = requireSource(deps.store, principal.tenant, sourceId);
    const update = parseOrProblem(SourcePropertyUpdate, await readJson(req, ctx.maxBodyBytes));
    const id = canonicalPropertyId(rawId);

    let property = record.properties.get(id);
    if (!property) {
      property = newPropertyRecord(id, update.type ?? record.pending.get(id)?.type ?? null, update.delimiter ?? DEFAULT_LIST_DELIMITER);
      record.properties.set(id, property);
    } else if (update.type != null && update.type !== property.type) {
      property.type = update.type;
      property.state = 'Updating';
      const changed = property;
      // Spec, Source property state: "A type change may trigger asynchronous reindexing and state
      // is to be inspected on later reads."
      deps.reindexLater(() => {
        if (changed.state === 'Updating') changed.state = 'Active';
      });
    }
    if (update.displayName != null) property.displayName = update.displayName;
    if (update.description != null) property.description = update.description;
    if (update.delimiter != null) property.delimiter = update.delimiter;
    const body: SourcePropertyAnswer = toSourceProperty(property);
    return { status: 200, body };
  });

  ctx.router.add(PATCH_SOURCE, async ({ req, params }) => {
    const sourceId = params.sourceId!;
    const principal = authorizeMetadata(ctx, req, sourceId);
    const record = requireSource(deps.store, principal.tenant, sourceId);
    const update = parseOrProblem(SourceUpdate, await readJson(req, ctx.maxBodyBytes));
    const source = record.source;
    if (update.name != null) source.name = update.name;
    if (update.description != null) source.description = update.description;
    source.updatedAt = nowIso();
    const body: SourceAnswer = { ...source };
    return { status: 200, body };
  });
}
