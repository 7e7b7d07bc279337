import type { AddressInfo } from 'node:net';
import pino, { type Logger } from 'pino';
import type { CloudEvent } from '../types.js';
import { registerAdminRoutes } from './admin/routes.js';
import { Credentials } from './auth/credentials.js';
import { registerIssuerRoutes } from './auth/issuer.js';
import {
  defaultApplications,
  defaultTenants,
  loadEmulatorConfig,
  parseEmulatorConfig,
  type EmulatorConfig,
  type IngestLimitsConfig,
  type ResolvedEmulatorConfig,
} from './config.js';
import { registerConsumerRoutes } from './consumers/routes.js';
import type { EmulatorContext, NewEvent } from './context.js';
import { FaultInjector } from './faults/injector.js';
import { faultOptionsSchema, type FaultOptions } from './faults/options.js';
import { DEFAULT_MAX_BODY_BYTES } from './http/body.js';
import { Router } from './http/router.js';
import { createEmulatorServer } from './server.js';
import { registerSourceRoutes, type SourcesModule } from './sources/index.js';
import type { OperationSpec } from './openapi/operation.js';
import { summarizeState, type EmulatorStateSummary } from './summary.js';
import { registerManagedTagRoutes } from './tags/index.js';
import { registerAccessCatalogRoutes } from './catalog/index.js';
import { registerDestinationRoutes } from './destinations/index.js';
import { parseDestinationSeed } from './destinations/registry.js';
import { HttpProblem } from './http/problem.js';
import { registerLegacyImportRoutes } from './legacy-import/index.js';
import { registerOpenApiRoutes } from './openapi/route.js';
import { tenantLimitsResolver } from './sources/limits.js';
import { Tenants } from './tenants.js';
import { ConfigError } from '../errors.js';
import { parseAllowedHosts } from '../runtime/loopback-guard.js';
import { createLocalServerGuard, parseAllowedOrigins } from '../runtime/local-server-guard.js';

export interface EmulatorOptions {
  /** TCP port. Default 8787; 0 = a random free port (read it from `RunningEmulator.port`). */
  port?: number;
  /** Interface to listen on. Default 127.0.0.1. */
  host?: string;
  /**
   * Host names the emulator answers besides `localhost`, 127.0.0.0/8 and `[::1]` (`--allowed-hosts`):
   * the name other containers reach it by, e.g. `emulator`; `.example.com` allows that name and every
   * name below it. A request for any other name gets 403. Default none.
   */
  allowedHosts?: readonly string[];
  /**
   * Origins whose pages may change the emulator's state besides its own (`--allowed-origins`), e.g.
   * `http://localhost:5173` for a local app that drives it from the browser. A state change from any
   * other page (its `Origin`, or `Sec-Fetch-Site` without one) gets 403; requests that are not from a
   * page (no `Origin`, no `Sec-Fetch-Site`: workers, SDKs, curl) are not concerned. Default none.
   */
  allowedOrigins?: readonly string[];
  /** Config object, or the path of a JSON config file. Default: the development defaults only (config.ts). */
  config?: EmulatorConfig | string;
  /** Lifetime of issued access tokens, seconds. Overrides the config. Default 3600. */
  tokenLifetimeSeconds?: number;
  /** Faults from the start. Overrides the config's `faults`. Default none. */
  faults?: FaultOptions;
  /** Ceiling of a request body, bytes. Overrides the config. Default 1 MiB. */
  maxBodyBytes?: number;
  /** Where unexpected errors are logged. Default: pino at level warn on stderr. */
  logger?: Logger;
  /** Extra feature modules registering routes after the built-in ones (later features, tests). */
  modules?: ReadonlyArray<(ctx: EmulatorContext) => void>;
}

export interface RunningEmulator {
  /** `http://HOST:PORT`, the base of the public API and of the issuer. */
  url: string;
  port: number;
  /** Stops listening and closes keep-alive sockets. Idempotent. */
  close(): Promise<void>;
  faults: { set(faults: FaultOptions): void; clear(): void };
  /** Resolves when every accepted ingest has been applied and its events appended. */
  idle(): Promise<void>;
  /** Same summary as `GET /_emulator/state`. */
  state(): EmulatorStateSummary;
  /** Appends events to a tenant's stream directly (tests and benchmarks); throws for an unknown tenant. */
  appendEvents(tenant: string, events: readonly NewEvent[]): CloudEvent[];
}

function resolveConfig(config: EmulatorOptions['config']): ResolvedEmulatorConfig {
  return typeof config === 'string' ? loadEmulatorConfig(config) : parseEmulatorConfig(config ?? {});
}

function checkOptions(options: EmulatorOptions): void {
  const { port, tokenLifetimeSeconds, maxBodyBytes } = options;
  if (port !== undefined && (!Number.isInteger(port) || port < 0 || port > 65_535)) throw new ConfigError(`port must be 0..65535 (got ${port})`, '--port');
  if (tokenLifetimeSeconds !== undefined && (!Number.isInteger(tokenLifetimeSeconds) || tokenLifetimeSeconds < 1)) {
    throw new ConfigError(`tokenLifetimeSeconds must be a whole number of seconds >= 1 (got ${tokenLifetimeSeconds})`, '--token-lifetime');
  }
  if (maxBodyBytes !== undefined && (!Number.isInteger(maxBodyBytes) || maxBodyBytes < 1))
    throw new ConfigError(`maxBodyBytes must be a positive integer (got ${maxBodyBytes})`);
  if (options.faults !== undefined) {
    const parsed = faultOptionsSchema.safeParse(options.faults);
    if (!parsed.success) throw new ConfigError(`faults: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`);
  }
}

/** A wildcard address is reachable at loopback; an IPv6 literal needs brackets. */
function urlHost(host: string): string {
  if (host === '0.0.0.0' || host === '::') return '127.0.0.1';
  return host.includes(':') ? `[${host}]` : host;
}

/** The emulator's parts, wired, before it listens. */
interface Assembled {
  router: Router;
  faults: FaultInjector;
  logger: Logger;
  sources: SourcesModule;
  state: () => EmulatorStateSummary;
  appendEvents: RunningEmulator['appendEvents'];
}

function assemble(options: EmulatorOptions): Assembled {
  checkOptions(options);
  const config = resolveConfig(options.config);
  const logger = options.logger ?? pino({ level: 'warn', base: { component: 'emulator' } }, pino.destination(2));
  const maxBodyBytes = options.maxBodyBytes ?? config.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;

  const tenants = new Tenants();
  const credentials = new Credentials(options.tokenLifetimeSeconds ?? config.tokenLifetimeSeconds);
  for (const tenantConfig of [...(config.defaults ? defaultTenants() : []), ...config.tenants]) {
    const tenant = tenants.ensure(tenantConfig.id);
    for (const apiKey of tenantConfig.apiKeys) credentials.addApiKey(tenant.id, apiKey);
    for (const destination of tenantConfig.destinations) {
      if (tenant.addDestination(destination.id, destination.type) === undefined) {
        throw new ConfigError(`emulator config: destination "${destination.id}" is defined twice in tenant "${tenant.id}"`, '--config');
      }
    }
  }
  for (const application of [...(config.defaults ? defaultApplications() : []), ...config.applications, ...config.clients]) {
    tenants.ensure(application.tenant);
    credentials.addApplication(application);
  }
  const faults = new FaultInjector(options.faults ?? config.faults);

  const appendEvents = (tenantId: string, events: readonly NewEvent[]): CloudEvent[] => {
    const tenant = tenants.get(tenantId);
    if (tenant === undefined) throw new Error(`unknown tenant "${tenantId}"`);
    return tenant.append(events);
  };
  const router = new Router();
  const ctx: EmulatorContext = {
    router,
    authenticate: (req, anyOfScopes) => credentials.authenticate(req, anyOfScopes),
    appendEvents,
    maxBodyBytes,
  };
  // Late-bound: the destination registry is created below, and destinations are seeded at run time.
  let apiVersionTenant = (_audience: string): string | undefined => undefined;
  registerIssuerRoutes(router, credentials, maxBodyBytes, (audience) => apiVersionTenant(audience), { logger });
  registerConsumerRoutes(ctx, tenants);
  const tenantLimits = new Map<string, IngestLimitsConfig>();
  for (const tenantConfig of config.tenants) if (tenantConfig.ingestLimits) tenantLimits.set(tenantConfig.id, tenantConfig.ingestLimits);
  const limitsFor = tenantLimitsResolver(maxBodyBytes, config.ingestLimits, tenantLimits);
  const sources = registerSourceRoutes(ctx, { autoCreateSources: config.autoCreateSources, limitsFor });
  const state = (): EmulatorStateSummary => summarizeState(tenants, (tenant) => sources.summary(tenant), faults.current());
  registerAdminRoutes(ctx, { tenants, credentials, faults, state });
  registerManagedTagRoutes(ctx);
  registerAccessCatalogRoutes(ctx, config.accessCatalog ? { catalogFor: () => structuredClone(config.accessCatalog!) } : {});
  registerLegacyImportRoutes(ctx, {
    enqueueImport: (tenant, dataSource, entries) => sources.enqueueLegacy(tenant, dataSource, entries),
    ...(config.autoCreateSources ? {} : { sourceExists: (tenant: string, id: string) => sources.getSource(tenant, id) !== undefined }),
    importRequestsPerMinuteFor: (tenant) => tenantLimits.get(tenant)?.importRequestsPerMinute ?? config.ingestLimits?.importRequestsPerMinute,
  });
  const destinations = registerDestinationRoutes(ctx, {
    readSourceEntries: (tenant, sourceId) => sources.listEntries(tenant, sourceId),
    verifyApplication: (clientId, clientSecret) => credentials.verifyClient(clientId, clientSecret),
    isIssuerTokenForAudience: (token, apiVersionId) => credentials.isApiVersionToken(token, apiVersionId),
  });
  apiVersionTenant = (audience) => destinations.registry.all().find((d) => d.apiVersionId === audience)?.tenant;
  config.destinationApis.forEach((seed, index) => {
    try {
      destinations.registry.put(parseDestinationSeed(seed));
    } catch (err) {
      if (!(err instanceof HttpProblem)) throw err;
      const details = Object.entries(err.errors ?? {})
        .map(([path, messages]) => `${path}: ${messages.join(' ')}`)
        .join('; ');
      throw new ConfigError(`emulator config: destinationApis[${index}]: ${details || err.detail}`, '--config');
    }
  });
  registerOpenApiRoutes(ctx);
  for (const module of options.modules ?? []) module(ctx);
  return { router, faults, logger, sources, state, appendEvents };
}

/** The operations of every route an emulator with these options serves (its OpenAPI description's). */
export function emulatorOperations(options: EmulatorOptions = {}): OperationSpec[] {
  const { router, sources } = assemble(options);
  sources.close();
  return router.operations();
}

/** Starts the platform emulator: public API, issuer and seeding endpoints on one origin. */
export async function startEmulator(options: EmulatorOptions = {}): Promise<RunningEmulator> {
  const guard = createLocalServerGuard({
    allowedHosts: parseAllowedHosts(options.allowedHosts, 'allowedHosts'),
    allowedOrigins: parseAllowedOrigins(options.allowedOrigins, 'allowedOrigins'),
  });
  const { router, faults, logger, sources, state, appendEvents } = assemble(options);
  const server = createEmulatorServer({ router, faults, logger, guard });
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 8787, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  server.on('error', (err) => logger.error({ err }, 'emulator server error'));
  const port = (server.address() as AddressInfo).port;

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      try {
        sources.close();
      } catch (err) {
        logger.warn({ err }, 'closing the sources module failed');
      }
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    })();
    return closing;
  };

  return {
    url: `http://${urlHost(host)}:${port}`,
    port,
    close,
    faults: { set: (f) => faults.set(faultOptionsSchema.parse(f)), clear: () => faults.clear() },
    idle: () => sources.idle(),
    state,
    appendEvents,
  };
}
