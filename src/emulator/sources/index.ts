import type { IngestLimits, PlannedEntry } from '../../ingest/index.js';
import type { Source, SourceProperty } from '../../types.js';
import type { EmulatorContext } from '../context.js';
import { ApplyQueue } from './apply-queue.js';
import { applyIngest, registerIngestRoute, type IngestJob } from './ingest.js';
import { registerMetadataRoutes } from './metadata.js';
import { entryReadShape, type ReadEntry } from './read-shape.js';
import { registerReadRoutes } from './reads.js';
import { tenantLimitsResolver, type TenantIngestLimits } from './limits.js';
import { SourceStore, toSourceProperty, type PropertyRecord } from './store.js';

/**
 * Sources, typed ingest, reads and metadata of the emulator (spec: Typed source ingest, Read source
 * entries, Create or update a source property, Update source metadata).
 */
export interface SourcesOptions {
  /** Typed ingest to an unknown source id creates it (type Generic, status Active). Default true (development). */
  autoCreateSources: boolean;
  /**
   * Tenant ingest ceilings (spec, Limits: tenant-configured, values not shown). Default:
   * maxRequestBytes = the emulator's body ceiling (`ctx.maxBodyBytes`), the others
   * DEFAULT_INGEST_LIMITS (1 MiB per entry, 256 KiB per property value).
   */
  ingestLimits?: Partial<IngestLimits>;
  /**
   * Per-tenant limits, consulted on every ingest (wins over `ingestLimits`), including the typed
   * ingest request rate. Built from the emulator config by `tenantLimitsResolver`.
   */
  limitsFor?: (tenant: string) => TenantIngestLimits;
  /** Clock of the request-rate window, epoch ms. Default `Date.now`. */
  nowMs?: () => number;
  /** Called when applying a batch throws (a bug): default emits a process warning. */
  onApplyError?: (err: unknown) => void;
}

export interface SourcesSummary {
  sources: Array<{ id: string; entryCount: number; propertyCount: number }>;
}

export interface SourcesModule {
  /** Resolves when every accepted ingest batch has been applied and its events appended. */
  idle(): Promise<void>;
  /** Stops the apply queue (batches not yet applied are dropped). Idempotent. */
  close(): void;
  summary(tenant: string): SourcesSummary;
  /** Creates a source (status Active, type Generic) unless it exists; returns it. For seeding and tests. */
  ensureSource(tenant: string, sourceId: string, init?: { name?: string; description?: string }): Source;
  /** The source, or undefined. */
  getSource(tenant: string, sourceId: string): Source | undefined;
  /** Property configuration of a source (empty for an unknown source). */
  listProperties(tenant: string, sourceId: string): SourceProperty[];
  /**
   * Every applied entry of a source in its read shape (for destinations). A value the current type
   * cannot represent appears as its raw string with `type: null` instead of failing.
   */
  listEntries(tenant: string, sourceId: string): ReadEntry[];
  /**
   * Queues legacy import entries (string values at rest, `null` clears) for the same apply queue as
   * typed ingest, creating the source when it is absent. Each entry emits `source_entry.updated`.
   */
  enqueueLegacy(tenant: string, sourceId: string, entries: ReadonlyArray<{ id: string; properties: Record<string, string | null> }>): void;
}

type Job = IngestJob | { kind: 'reindex'; run(): void };

export function registerSourceRoutes(ctx: EmulatorContext, options: SourcesOptions): SourcesModule {
  const store = new SourceStore();
  const onError =
    options.onApplyError ?? ((err: unknown) => process.emitWarning(`emulator sources: applying a batch failed: ${(err as Error)?.stack ?? String(err)}`));
  const queue = new ApplyQueue<Job>((job) => (job.kind === 'ingest' ? applyIngest(ctx, store, job) : job.run()), onError);
  const limitsFor = options.limitsFor ?? tenantLimitsResolver(ctx.maxBodyBytes, options.ingestLimits);

  registerIngestRoute(ctx, { store, queue, autoCreateSources: options.autoCreateSources, limitsFor, ...(options.nowMs ? { nowMs: options.nowMs } : {}) });
  registerReadRoutes(ctx, store);
  registerMetadataRoutes(ctx, {
    store,
    reindexLater: (run) => {
      if (!queue.isClosed) queue.push({ kind: 'reindex', run });
    },
  });

  return {
    idle: () => queue.idle(),
    close: () => queue.close(),
    summary: (tenant) => ({
      sources: store.list(tenant).map((record) => ({
        id: record.source.id,
        entryCount: record.entries.size,
        propertyCount: record.properties.size,
      })),
    }),
    ensureSource: (tenant, sourceId, init) => ({ ...store.create(tenant, sourceId, init).source }),
    getSource: (tenant, sourceId) => {
      const record = store.get(tenant, sourceId);
      return record ? { ...record.source } : undefined;
    },
    listProperties: (tenant, sourceId) => [...(store.get(tenant, sourceId)?.properties.values() ?? [])].map(toSourceProperty),
    listEntries: (tenant, sourceId) => {
      const record = store.get(tenant, sourceId);
      if (!record) return [];
      return [...record.entries.values()].map((entry) => entryReadShape(entry, record.properties, false));
    },
    enqueueLegacy: (tenant, sourceId, entries) => {
      if (queue.isClosed) return;
      const record = store.create(tenant, sourceId);
      queue.push({ kind: 'ingest', tenant, sourceId, plan: legacyPlan(record.properties, entries) });
    },
  };
}

/**
 * A legacy import as an apply plan. Legacy values are already the string-at-rest form (our chosen
 * shape, see legacy-import/validate.ts), so they are stored as given, without a language, and read
 * back typed by the current configuration like any stored value; nothing is inferred.
 */
function legacyPlan(
  properties: ReadonlyMap<string, PropertyRecord>,
  entries: ReadonlyArray<{ id: string; properties: Record<string, string | null> }>,
): IngestJob['plan'] {
  const planned: PlannedEntry[] = entries.map((entry) => ({
    id: entry.id,
    properties: Object.entries(entry.properties).map(([id, value]) => {
      const config = properties.get(id);
      return {
        id,
        language: null,
        type: config?.type ?? 'Text',
        delimiter: config?.delimiter ?? null,
        value,
        atRest: value ?? '',
        cleared: value === null,
      };
    }),
  }));
  return { entries: planned, newPropertiesFound: [], requestBytes: 0 };
}
