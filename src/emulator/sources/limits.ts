import { DEFAULT_INGEST_LIMITS, type IngestLimits } from '../../ingest/index.js';

/**
 * Per-tenant usage limits of typed ingest (spec, Limits: "Request size, entry size and property
 * value size ceilings are tenant-configured, and usage limits on ... request rate ... are applied
 * per tenant with 429 plus Retry-After"; the numbers are not shown).
 */
export interface TenantIngestLimits extends IngestLimits {
  /** Typed ingest requests per minute; undefined = no rate limit (the default, so benchmarks are not throttled). */
  requestsPerMinute?: number | undefined;
}

/** What a config may give, for every tenant or for one (every field optional). */
export type IngestLimitsInput = Partial<TenantIngestLimits>;

/**
 * Resolves the limits of each tenant: DEFAULT_INGEST_LIMITS, then the emulator's body ceiling as
 * `maxRequestBytes`, then the config's defaults for every tenant, then the tenant's own overrides.
 */
export function tenantLimitsResolver(
  maxBodyBytes: number,
  defaults: IngestLimitsInput = {},
  perTenant: ReadonlyMap<string, IngestLimitsInput> = new Map(),
): (tenant: string) => TenantIngestLimits {
  const base: TenantIngestLimits = { ...DEFAULT_INGEST_LIMITS, maxRequestBytes: maxBodyBytes, ...definedOnly(defaults) };
  const cache = new Map<string, TenantIngestLimits>();
  return (tenant) => {
    let limits = cache.get(tenant);
    if (!limits) {
      limits = { ...base, ...definedOnly(perTenant.get(tenant) ?? {}) };
      cache.set(tenant, limits);
    }
    return limits;
  };
}

function definedOnly(input: IngestLimitsInput): IngestLimitsInput {
  return Object.fromEntries(Object.entries(input).filter(([, value]) => typeof value === 'number' && Number.isFinite(value)));
}
