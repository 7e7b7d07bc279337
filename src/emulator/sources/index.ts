import type { EmulatorContext } from '../context.js';

/**
 * Sources, typed ingest, reads and metadata of the emulator (spec: Typed source ingest, Read source
 * entries, Create or update a source property, Update source metadata). STUB: being implemented.
 */
export interface SourcesOptions {
  /** Typed ingest to an unknown source id creates it (type Generic, status Active). Default true (development). */
  autoCreateSources: boolean;
}

export interface SourcesSummary {
  sources: Array<{ id: string; entryCount: number; propertyCount: number }>;
}

export interface SourcesModule {
  /** Resolves when every accepted ingest batch has been applied and its events appended. */
  idle(): Promise<void>;
  /** Stops the apply queue. Idempotent. */
  close(): void;
  summary(tenant: string): SourcesSummary;
}

export function registerSourceRoutes(_ctx: EmulatorContext, _options: SourcesOptions): SourcesModule {
  return { idle: async () => {}, close: () => {}, summary: () => ({ sources: [] }) };
}
