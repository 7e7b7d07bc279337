import { z } from 'zod';
import {
  DEFAULT_LIST_DELIMITER,
  PROPERTY_DATA_TYPES,
  canonicalPropertyId,
  delimiterProblem,
  propertyIdProblem,
  requestPath,
} from '../../ingest/index.js';
import type { PropertyDataType, Source, SourceProperty } from '../../types.js';
import type { EmulatorContext } from '../context.js';
import { readJson } from '../http/body.js';
import { validationProblem } from '../http/problem.js';
import { authorizeMetadata } from './access.js';
import { requireSource } from './reads.js';
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

const nullableText = (field: string) => z.string({ error: `${field} must be a string or null` }).nullish();

const putPropertySchema = z.object(
  {
    displayName: nullableText('displayName').refine((v) => v == null || v.trim().length > 0, { error: 'displayName must not be empty' }),
    delimiter: nullableText('delimiter').superRefine((v, issue) => {
      const problem = v == null ? undefined : delimiterProblem(v);
      if (problem) issue.addIssue({ code: 'custom', message: problem });
    }),
    description: nullableText('description'),
    type: z
      .enum(PROPERTY_DATA_TYPES as [PropertyDataType, ...PropertyDataType[]], { error: `type must be one of ${PROPERTY_DATA_TYPES.join(', ')}` })
      .nullish(),
  },
  { error: 'the body must be a JSON object' },
);

const patchSourceSchema = z.object(
  {
    name: nullableText('name').refine((v) => v == null || v.trim().length > 0, { error: 'name must not be empty' }),
    description: nullableText('description'),
  },
  { error: 'the body must be a JSON object' },
);

function parseOrProblem<T>(schema: z.ZodType<T>, body: unknown): T {
  const parsed = schema.safeParse(body);
  if (parsed.success) return parsed.data;
  const errors: Record<string, string[]> = {};
  for (const issue of parsed.error.issues) (errors[requestPath(issue.path)] ??= []).push(issue.message);
  throw validationProblem(errors);
}

export interface MetadataDeps {
  store: SourceStore;
  /** Runs `job` on the apply queue, after every batch accepted before it. */
  reindexLater(job: () => void): void;
}

export function registerMetadataRoutes(ctx: EmulatorContext, deps: MetadataDeps): void {
  ctx.router.add('PUT', '/v1/sources/:sourceId/properties/:propertyId', async ({ req, params }) => {
    const sourceId = params.sourceId!;
    const principal = authorizeMetadata(ctx, req, sourceId);
    const rawId = params.propertyId!;
    const idProblem = propertyIdProblem(rawId);
    if (idProblem) {
      req.resume();
      throw validationProblem({ propertyId: [idProblem] });
    }
    const record = requireSource(deps.store, principal.tenant, sourceId);
    const update = parseOrProblem(putPropertySchema, await readJson(req, ctx.maxBodyBytes));
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
    const body: SourceProperty = toSourceProperty(property);
    return { status: 200, body };
  });

  ctx.router.add('PATCH', '/v1/sources/:sourceId', async ({ req, params }) => {
    const sourceId = params.sourceId!;
    const principal = authorizeMetadata(ctx, req, sourceId);
    const record = requireSource(deps.store, principal.tenant, sourceId);
    const update = parseOrProblem(patchSourceSchema, await readJson(req, ctx.maxBodyBytes));
    const source = record.source;
    if (update.name != null) source.name = update.name;
    if (update.description != null) source.description = update.description;
    source.updatedAt = nowIso();
    const body: Source = { ...source };
    return { status: 200, body };
  });
}
