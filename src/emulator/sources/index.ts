import { DEFAULT_INGEST_LIMITS, type IngestLimits } from '../../ingest/index.js';
import type { Source, SourceEntry, SourceProperty } from '../../types.js';
import type { EmulatorContext } from '../context.js';
import { ApplyQueue } from './apply-queue.js';
import { applyIngest, registerIngestRoute, type IngestJob } from './ingest.js';
import { registerMetadataRoutes } from './metadata.js';
import { entryReadShape } from './read-shape.js';
import { registerReadRoutes } from './reads.js';
import { SourceStore, toSourceProperty } from './store.js';

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
  listEntries(tenant: string, sourceId: string): SourceEntry[];
}

type Job = IngestJob | { kind: 'reindex'; run(): void };

export function registerSourceRoutes(ctx: EmulatorContext, options: SourcesOptions): SourcesModule {
  const store = new SourceStore();
  const onError =
    options.onApplyError ?? ((err: unknown) => process.emitWarning(`emulator sources: applying a batch failed: ${(err as Error)?.stack ?? String(err)}`));
  const queue = new ApplyQueue<Job>((job) => (job.kind === 'ingest' ? applyIngest(ctx, store, job) : job.run()), onError);
  const limits: IngestLimits = {
    ...DEFAULT_INGEST_LIMITS,
    maxRequestBytes: ctx.maxBodyBytes,
    ...Object.fromEntries(Object.entries(options.ingestLimits ?? {}).filter(([, value]) => typeof value === 'number')),
  };

  registerIngestRoute(ctx, { store, queue, autoCreateSources: options.autoCreateSources, limits });
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
  };
}
