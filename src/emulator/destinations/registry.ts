import { randomUUID } from 'node:crypto';
import { parseOrProblem } from '../http/validation.js';
import { DestinationSeedSchema } from './schemas.js';

/** One exposed property of an endpoint: the source property and the name it is exposed under. */
export interface EndpointProperty {
  /** Source property ID (lowercase at rest). */
  id: string;
  alias?: string;
}

export interface EndpointFacet {
  /** Source property ID. */
  propertyId: string;
  /** Maximum number of values (spec: above 50 can slow responses; we do not refuse it). */
  size: number;
  /** Localized label: language -> text. */
  header?: Record<string, string>;
}

export interface EndpointConfig {
  name: string;
  /** Undefined exposes every property of the source. */
  properties?: EndpointProperty[];
  facets: EndpointFacet[];
}

export interface DestinationConfig {
  customer: string;
  destination: string;
  protected: boolean;
  sourceId: string;
  tenant: string;
  /** First one is the default language of queries. */
  languages: string[];
  endpoints: EndpointConfig[];
  /** Audience of issuer tokens for this protected API version (spec: Authentication rule 8). */
  apiVersionId: string;
}

export const DEFAULT_TENANT = 'dev-tenant';
/** Languages of a destination seeded without `languages` (our choice; the spec does not show a default). */
export const DEFAULT_LANGUAGES = ['en'];

/** Validates the body of `POST /_emulator/destinations` (schemas.ts); IDs of properties lowercased. */
export function parseDestinationSeed(body: unknown): Omit<DestinationConfig, 'apiVersionId'> {
  const seed = parseOrProblem(DestinationSeedSchema, body);
  return {
    customer: seed.customer,
    destination: seed.destination,
    protected: seed.protected === true,
    sourceId: seed.sourceId,
    tenant: seed.tenant ?? DEFAULT_TENANT,
    languages: seed.languages ?? DEFAULT_LANGUAGES,
    endpoints: seed.endpoints.map((endpoint) => ({
      name: endpoint.name,
      ...(endpoint.properties
        ? { properties: endpoint.properties.map((p) => ({ id: p.id.toLowerCase(), ...(p.alias !== undefined ? { alias: p.alias } : {}) })) }
        : {}),
      facets: (endpoint.facets ?? []).map((f) => ({ propertyId: f.propertyId.toLowerCase(), size: f.size, ...(f.header ? { header: f.header } : {}) })),
    })),
  };
}

export class DestinationRegistry {
  readonly #byPath = new Map<string, DestinationConfig>();

  /** Seeding the same customer/destination again replaces it and keeps its API version ID. */
  put(seed: Omit<DestinationConfig, 'apiVersionId'>): DestinationConfig {
    const key = `${seed.customer}/${seed.destination}`;
    const config: DestinationConfig = { ...seed, apiVersionId: this.#byPath.get(key)?.apiVersionId ?? randomUUID() };
    this.#byPath.set(key, config);
    return config;
  }

  get(customer: string, destination: string): DestinationConfig | undefined {
    return this.#byPath.get(`${customer}/${destination}`);
  }

  /**
   * The `{destination_id}` of the token endpoint: the destination's name or its API version ID.
   * A name used by two customers is ambiguous there: the API version ID must be used.
   */
  resolveTokenTarget(destinationId: string): DestinationConfig | 'ambiguous' | undefined {
    const matches = [...this.#byPath.values()].filter((d) => d.apiVersionId === destinationId || d.destination === destinationId);
    if (matches.length > 1) return 'ambiguous';
    return matches[0];
  }

  all(): DestinationConfig[] {
    return [...this.#byPath.values()];
  }
}
