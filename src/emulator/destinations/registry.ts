import { randomUUID } from 'node:crypto';
import { HttpProblem } from '../http/problem.js';
import { ErrorBag, isPlainObject } from '../tags/seeding.js';

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
  /** Undefined exposes every property of the source (CONTRACT). */
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

const SLUG = /^[A-Za-z0-9][A-Za-z0-9._~-]*$/;

/** Validates the CONTRACT body of `POST /_emulator/destinations`. */
export function parseDestinationSeed(body: unknown): Omit<DestinationConfig, 'apiVersionId'> {
  if (!isPlainObject(body)) throw new HttpProblem(400, 'The body must be a JSON object.', { $: ['Expected an object.'] });
  const bag = new ErrorBag();
  for (const key of ['customer', 'destination', 'sourceId'] as const) {
    if (typeof body[key] !== 'string' || !SLUG.test(body[key])) bag.add(key, `${key} is required: letters, digits, '.', '_', '~' or '-'.`);
  }
  if (body.protected !== undefined && typeof body.protected !== 'boolean') bag.add('protected', 'protected must be a boolean.');
  if (body.tenant !== undefined && (typeof body.tenant !== 'string' || body.tenant === '')) bag.add('tenant', 'tenant must be a non-empty string.');
  let languages = DEFAULT_LANGUAGES;
  if (body.languages !== undefined) {
    const l = body.languages;
    if (!Array.isArray(l) || l.length === 0 || l.some((x) => typeof x !== 'string' || x === '' || x.toLowerCase() === 'all')) {
      bag.add('languages', "languages must be a non-empty array of language codes ('all' is reserved).");
    } else if (new Set(l.map((x: string) => x.toLowerCase())).size !== l.length) bag.add('languages', 'languages must be distinct.');
    else languages = l as string[];
  }
  const endpoints: EndpointConfig[] = [];
  if (!Array.isArray(body.endpoints) || body.endpoints.length === 0) bag.add('endpoints', 'endpoints must be a non-empty array.');
  else {
    const names = new Set<string>();
    body.endpoints.forEach((raw, i) => {
      const endpoint = parseEndpoint(raw, `endpoints[${i}]`, bag);
      if (!endpoint) return;
      if (names.has(endpoint.name)) bag.add(`endpoints[${i}].name`, `Endpoint ${endpoint.name} is defined twice.`);
      names.add(endpoint.name);
      endpoints.push(endpoint);
    });
  }
  if (!bag.empty) throw new HttpProblem(400, 'One or more validation errors occurred.', bag.errors);
  return {
    customer: body.customer as string,
    destination: body.destination as string,
    protected: body.protected === true,
    sourceId: body.sourceId as string,
    tenant: typeof body.tenant === 'string' ? body.tenant : DEFAULT_TENANT,
    languages,
    endpoints,
  };
}

function parseEndpoint(raw: unknown, path: string, bag: ErrorBag): EndpointConfig | undefined {
  if (!isPlainObject(raw)) {
    bag.add(path, 'An endpoint must be an object.');
    return undefined;
  }
  const ok = typeof raw.name === 'string' && SLUG.test(raw.name) && raw.name !== 'openapi';
  if (!ok) bag.add(`${path}.name`, "name is required: letters, digits, '.', '_', '~' or '-', and not 'openapi'.");
  const endpoint: EndpointConfig = { name: String(raw.name), facets: [] };
  if (raw.properties !== undefined) {
    if (!Array.isArray(raw.properties)) bag.add(`${path}.properties`, 'properties must be an array.');
    else {
      const exposed = new Set<string>(['id']);
      endpoint.properties = [];
      raw.properties.forEach((p, j) => {
        const at = `${path}.properties[${j}]`;
        if (!isPlainObject(p) || typeof p.id !== 'string' || p.id === '') return bag.add(`${at}.id`, 'id is required.');
        if (p.alias !== undefined && (typeof p.alias !== 'string' || p.alias === '')) return bag.add(`${at}.alias`, 'alias must be a non-empty string.');
        const property: EndpointProperty = { id: p.id.toLowerCase() };
        if (typeof p.alias === 'string') property.alias = p.alias;
        const name = property.alias ?? property.id;
        if (exposed.has(name)) return bag.add(at, `The exposed name ${name} is used twice (id is always exposed).`);
        exposed.add(name);
        endpoint.properties!.push(property);
      });
    }
  }
  if (raw.facets !== undefined) {
    if (!Array.isArray(raw.facets)) bag.add(`${path}.facets`, 'facets must be an array.');
    else {
      raw.facets.forEach((f, j) => {
        const at = `${path}.facets[${j}]`;
        if (!isPlainObject(f)) return bag.add(at, 'A facet must be an object.');
        if (typeof f.propertyId !== 'string' || f.propertyId === '') bag.add(`${at}.propertyId`, 'propertyId is required.');
        if (typeof f.size !== 'number' || !Number.isInteger(f.size) || f.size < 1) bag.add(`${at}.size`, 'size must be a positive integer.');
        const header = f.header;
        if (header !== undefined && (!isPlainObject(header) || Object.values(header).some((v) => typeof v !== 'string'))) {
          bag.add(`${at}.header`, 'header must map languages to strings.');
        }
        if (typeof f.propertyId === 'string' && typeof f.size === 'number') {
          const facet: EndpointFacet = { propertyId: f.propertyId.toLowerCase(), size: f.size };
          if (isPlainObject(header)) facet.header = header as Record<string, string>;
          endpoint.facets.push(facet);
        }
      });
    }
  }
  return endpoint;
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
