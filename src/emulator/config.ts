import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import * as z from 'zod';
import { ConfigError } from '../errors.js';
import type { AccessCatalogItem } from '../types.js';
import { faultOptionsSchema } from './faults/options.js';
import { requestPath } from './http/validation.js';
import { REDIRECT_URI_PATTERN, redirectUriProblem } from './auth/redirect-uris.js';

/** Machine token scopes of the spec (Authentication, rule 7). */
export const ALL_SCOPES = ['write:sources', 'import-datasource', 'read:events', 'read:events:pull', 'read:events:sse'] as const;
export type Scope = (typeof ALL_SCOPES)[number];

export const DESTINATION_TYPES = ['DURABLE_CONSUMER', 'WEBHOOK'] as const;
export type DestinationType = (typeof DESTINATION_TYPES)[number];

/** The development identities README.md and docs/client.md give: not secrets. */
export const DEV_DEFAULTS = {
  tenant: 'dev-tenant',
  clientId: 'dev-client',
  clientSecret: 'dev-secret',
  /** The emulator's own choice: the dev tenant also accepts this organization API key. */
  apiKey: 'dev-api-key',
  consumer: 'dev-consumer',
  webhook: 'dev-webhook',
  /** dev-client's: a local app's callback on any port (loopback redirect URIs, OAuth 2.1). */
  redirectUris: ['http://127.0.0.1/callback', 'http://[::1]/callback'],
} as const;

const id = z.string().min(1).max(200);

/** A redirect URI an application registers (auth/redirect-uris.ts). */
export const redirectUriSchema = z
  .string()
  .superRefine((value, ctx) => {
    const problem = redirectUriProblem(value);
    if (problem !== undefined) ctx.addIssue({ code: 'custom', message: `redirect URI ${problem} (got ${JSON.stringify(value.slice(0, 200))})` });
  })
  .meta({ pattern: REDIRECT_URI_PATTERN.source });

/**
 * Per-tenant ingest limits (spec, Limits: tenant-configured ceilings and request rate; numbers not
 * shown). Given at the top level they apply to every tenant; in a tenant they override those.
 */
export const ingestLimitsConfigSchema = z
  .object({
    /** Ceiling of a typed ingest request body, bytes. Default: `maxBodyBytes` (1 MiB). */
    maxRequestBytes: z
      .number()
      .int()
      .min(1)
      .max(256 * 1024 * 1024)
      .optional(),
    /** Ceiling of one entry as JSON, bytes. Default 1 MiB. */
    maxEntrySizeBytes: z.number().int().min(1).optional(),
    /** Ceiling of one property value at rest, bytes. Default 256 KiB. */
    maxPropertyValueBytes: z.number().int().min(1).optional(),
    /** Typed ingest requests per minute per tenant before 429 + Retry-After. Default: unlimited. */
    requestsPerMinute: z.number().int().min(1).optional(),
    /** Legacy import requests per minute per tenant (verify never counts). Default 600. */
    importRequestsPerMinute: z.number().int().min(1).optional(),
  })
  .strict();

/** Spec: Application access catalog item (a tree through `children`). */
export type AccessCatalogItemConfig = AccessCatalogItem;

export const accessCatalogItemSchema: z.ZodType<AccessCatalogItemConfig, unknown> = z.lazy(() =>
  z
    .object({
      key: z.string().min(1),
      grantType: z.string().min(1).default('Group'),
      label: z.string().default(''),
      description: z.string().default(''),
      resourceId: z.string().default(''),
      audience: z.string().default(''),
      children: z.array(accessCatalogItemSchema).default([]),
    })
    .strict(),
);

export const destinationConfigSchema = z.object({ id, type: z.enum(DESTINATION_TYPES) }).strict();

export const applicationConfigSchema = z
  .object({
    /** Tenant the application belongs to (its token audience). Default `dev-tenant`. */
    tenant: id.default(DEV_DEFAULTS.tenant),
    clientId: id,
    clientSecret: z.string().min(1),
    /** Scopes enabled for the application. Default: every scope. */
    scopes: z.array(z.enum(ALL_SCOPES)).default([...ALL_SCOPES]),
    /** Sources the application may write: `'all'` (default) or a list of source ids. */
    sources: z.union([z.literal('all'), z.array(id)]).default('all'),
    /** Legacy data-provider application (restricted to its sources). Default false. */
    dataProvider: z.boolean().default(false),
    /**
     * Redirect URIs of the interactive sign-in (`GET /oauth2/auth`), each an absolute http(s) URL
     * without a fragment, matched exactly; an `http` one on `127.0.0.1` or `[::1]` matches any port.
     * Default: none (the sign-in is refused), `dev-client` has `http://127.0.0.1/callback` and
     * `http://[::1]/callback`.
     */
    redirectUris: z.array(redirectUriSchema).default([]),
  })
  .strict();

export const tenantConfigSchema = z
  .object({
    id,
    /** Organization API keys of the tenant (`x-api-key`); each holds every tenant scope and all sources. */
    apiKeys: z.array(z.string().min(1)).default([]),
    /** Event destinations created at start; a durable consumer starts at the head of the stream. */
    destinations: z.array(destinationConfigSchema).default([]),
    /** This tenant's ingest limits, over the top-level `ingestLimits`. */
    ingestLimits: ingestLimitsConfigSchema.optional(),
  })
  .strict();

export const emulatorConfigSchema = z
  .object({
    /** Include the development defaults (dev-tenant, dev-client, dev-consumer, dev-webhook). Default true. */
    defaults: z.boolean().default(true),
    /** Lifetime of issued access tokens, seconds. Default 3600. */
    tokenLifetimeSeconds: z
      .number()
      .int()
      .min(1)
      .max(7 * 24 * 3600)
      .default(3600),
    /** Typed ingest to an unknown source id creates it (type Generic, status Active). Default true. */
    autoCreateSources: z.boolean().default(true),
    /** Ceiling of a request body, bytes. Default 1 MiB. */
    maxBodyBytes: z
      .number()
      .int()
      .min(1024)
      .max(256 * 1024 * 1024)
      .optional(),
    /** Ingest limits of every tenant (a tenant's own `ingestLimits` override them). */
    ingestLimits: ingestLimitsConfigSchema.optional(),
    /**
     * The access catalog every tenant sees (`GET /v1/applications/access-catalog`). Default: the
     * emulator's own scopes grouped by area (emulator/catalog).
     */
    accessCatalog: z.array(accessCatalogItemSchema).optional(),
    /**
     * Destination query APIs created at start, each in the body shape of `POST /_emulator/destinations`
     * (src/emulator/admin/routes.ts), validated the same way.
     */
    destinationApis: z.array(z.record(z.string(), z.unknown())).default([]),
    tenants: z.array(tenantConfigSchema).default([]),
    applications: z.array(applicationConfigSchema).default([]),
    /** Alias of `applications`. */
    clients: z.array(applicationConfigSchema).default([]),
    faults: faultOptionsSchema.optional(),
  })
  .strict();

/** The emulator's JSON config as written by a user (every field optional). */
export type EmulatorConfig = z.input<typeof emulatorConfigSchema>;
/** The config after defaults. */
export type ResolvedEmulatorConfig = z.output<typeof emulatorConfigSchema>;
export type ApplicationConfig = z.output<typeof applicationConfigSchema>;
export type TenantConfig = z.output<typeof tenantConfigSchema>;
export type IngestLimitsConfig = z.output<typeof ingestLimitsConfigSchema>;

/** Validates a config object; throws ConfigError (code DW_ERR_CONFIG, CLI exit 2) naming every bad field. */
export function parseEmulatorConfig(value: unknown, label = 'emulator config'): ResolvedEmulatorConfig {
  const result = emulatorConfigSchema.safeParse(value ?? {});
  if (result.success) return result.data;
  const details = result.error.issues.map((issue) => `${requestPath(issue.path, '(root)')}: ${issue.message}`).join('; ');
  throw new ConfigError(`${label}: ${details}`, '--config');
}

/** Reads and validates the emulator's JSON config file; every failure is a ConfigError with a clear message. */
export function loadEmulatorConfig(path: string): ResolvedEmulatorConfig {
  const absolute = resolve(path);
  let text: string;
  try {
    text = readFileSync(absolute, 'utf8');
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    throw new ConfigError(`emulator config: cannot read ${absolute} (${typeof code === 'string' ? code : String(err)})`, '--config', { cause: err });
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(`emulator config: ${absolute} is not valid JSON (${(err as Error).message})`, '--config');
  }
  return parseEmulatorConfig(parsed, `emulator config ${absolute}`);
}

/** The development defaults ({@link DEV_DEFAULTS}) as config pieces, merged before the user's own. */
export function defaultTenants(): TenantConfig[] {
  return [
    {
      id: DEV_DEFAULTS.tenant,
      apiKeys: [DEV_DEFAULTS.apiKey],
      destinations: [
        { id: DEV_DEFAULTS.consumer, type: 'DURABLE_CONSUMER' },
        { id: DEV_DEFAULTS.webhook, type: 'WEBHOOK' },
      ],
    },
  ];
}

export function defaultApplications(): ApplicationConfig[] {
  return [
    {
      tenant: DEV_DEFAULTS.tenant,
      clientId: DEV_DEFAULTS.clientId,
      clientSecret: DEV_DEFAULTS.clientSecret,
      scopes: [...ALL_SCOPES],
      sources: 'all',
      dataProvider: false,
      redirectUris: [...DEV_DEFAULTS.redirectUris],
    },
  ];
}
