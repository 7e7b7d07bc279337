import { readFileSync } from 'node:fs';
import { ALL_SCOPES } from '../config.js';
import { componentName } from './components.js';
import { componentRef, componentSchemas, inlineSchema, referencedComponents, type JsonSchema } from './json-schema.js';
import { pathParameterNames, type OperationSpec, type OperationTag, type ResponseSpec } from './operation.js';
import { problem, rateLimited, validation } from './responses.js';

/**
 * Builds OpenAPI 3.1 documents from the operations routes declare (operation.ts). The same
 * declarations give the whole emulated API (platformApiDocument) and the spec's ingest interface
 * description (ingest-document.ts), so neither can list a route or a status the other does not.
 */

export interface DocumentInfo {
  title: string;
  version: string;
  description: string;
  /** Where the API is served; default: the emulator's default address. */
  serverUrl?: string;
}

/** The emulator's default origin (`durable-worker emulator` listens on 8787, as README.md says). */
export const DEFAULT_SERVER_URL = 'http://127.0.0.1:8787';

const LICENSE = { name: 'MIT', identifier: 'MIT' };
const CONTACT = { name: 'durable-worker maintainers' };

const TAGS: Record<OperationTag, string> = {
  Issuer: 'Token issuance at `{auth_url}` (the emulator serves it on its own origin): client credentials and the interactive sign-in.',
  Ingest: 'Typed source ingest and the legacy import operations.',
  Sources: 'Reads of source entries and source metadata.',
  'Managed tags': 'Managed tags: list, get, delete.',
  'Access catalog': 'The access options an application can be granted.',
  'Durable consumers': 'Pull leased batches and acknowledge them.',
  Destinations: 'Destination tokens (`{destinations_url}`) and destination query APIs (`{global_url}`), served on the emulator origin.',
  Descriptions: 'The machine-readable descriptions the emulator publishes.',
  'Emulator only':
    'Emulator only, not part of the platform API: seeding what the spec gives no way to create, state and fault injection. Loopback callers only, no credential.',
};

/** Statuses a route answers because of what it is, not what it does (see operation.ts). */
function impliedResponses(operation: OperationSpec): Record<string, ResponseSpec> {
  const out: Record<string, ResponseSpec> = {};
  const emulatorOnly = operation.tag === 'Emulator only';
  if (emulatorOnly) out['403'] = problem('The caller is not on the loopback interface (emulator-only endpoints).');
  if (operation.security.kind === 'tenant') {
    out['401'] = problem('No credential, or an invalid or expired one (`WWW-Authenticate: Bearer`).');
    if (operation.security.scopes.length > 0) out['403'] = problem(`The credential holds none of the scopes: ${operation.security.scopes.join(', ')}.`);
  }
  if (operation.security.kind === 'destination') out['401'] = problem('A protected destination without a valid, unexpired token (`WWW-Authenticate: Bearer`).');
  if (operation.requestBody && (operation.requestBody.mediaType ?? 'application/json') === 'application/json') {
    out['400'] = validation('The body is not valid JSON or not of the declared shape; messages keyed by request path (`$` for the whole body).');
    out['413'] = problem('The body is larger than the emulator accepts (`maxBodyBytes`, default 1 MiB).');
    out['415'] = problem('The body is not JSON (`Content-Type` other than `application/json` or `+json`).');
  }
  if (!emulatorOnly) {
    out['429'] = rateLimited('Too many requests: only when fault injection throttles this route (see the route for limits of its own).');
    // Injected faults, which stand for the platform's transient failures. An unexpected error is a
    // bug: on emulator-only routes it is left undeclared, so the suite's response check reports it.
    const failure = 'An injected fault (500 or 503), or an unexpected error in the emulator.';
    // An operation that only redirects (the authorization endpoint) has no 2XX answer to name;
    // OpenAPI tools then expect `default`, which here stands for that same failure.
    const redirectsOnly = !Object.keys(operation.responses).some((status) => status.startsWith('2'));
    out[redirectsOnly ? 'default' : '5XX'] = problem(redirectsOnly ? `Any other status: ${failure[0]!.toLowerCase()}${failure.slice(1)}` : failure);
  }
  for (const status of operation.omitImplied ?? []) delete out[status];
  return out;
}

/** Every answer of an operation: implied ones, overridden by those the route declares. */
export function operationResponses(operation: OperationSpec): Record<string, ResponseSpec> {
  const merged = { ...impliedResponses(operation), ...operation.responses };
  return Object.fromEntries(Object.entries(merged).sort(([a], [b]) => a.localeCompare(b)));
}

function security(operation: OperationSpec): Array<Record<string, string[]>> {
  switch (operation.security.kind) {
    case 'none':
      return [];
    case 'destination':
      return [{}, { destinationToken: [] }];
    case 'tenant': {
      const scopes = operation.security.scopes;
      const tokens = scopes.length === 0 ? [{ tenantToken: [] }] : scopes.map((scope) => ({ tenantToken: [scope] }));
      return [...tokens, { apiKey: [] }];
    }
  }
}

function parameters(operation: OperationSpec): JsonSchema[] {
  const out: JsonSchema[] = [];
  const declared = operation.pathParameters ?? {};
  for (const name of pathParameterNames(operation.path)) {
    const parameter = declared[name];
    if (parameter === undefined) throw new Error(`${operation.operationId}: path parameter {${name}} is not described`);
    out.push({ name, in: 'path', required: true, description: parameter.description, schema: inlineSchema(parameter.schema), ...example(parameter.example) });
  }
  for (const [name, parameter] of Object.entries(operation.query ?? {})) {
    const schema = inlineSchema(parameter.schema);
    out.push({
      name,
      in: 'query',
      required: parameter.required ?? false,
      description: parameter.description,
      schema,
      ...(schema.type === 'array' ? { style: 'form', explode: true } : {}),
      ...example(parameter.example),
    });
  }
  for (const [name, parameter] of Object.entries(operation.headers ?? {})) {
    out.push({
      name,
      in: 'header',
      required: parameter.required ?? false,
      description: parameter.description,
      schema: inlineSchema(parameter.schema),
      ...example(parameter.example),
    });
  }
  if (operation.freeformQuery) {
    const { name, description, schema } = operation.freeformQuery;
    out.push({
      name,
      in: 'query',
      required: false,
      description,
      style: 'form',
      explode: true,
      schema: { type: 'object', additionalProperties: inlineSchema(schema) },
    });
  }
  return out;
}

function example(value: unknown): { example?: unknown } {
  return value === undefined ? {} : { example: value };
}

function responseObject(response: ResponseSpec): JsonSchema {
  const out: JsonSchema = { description: response.description };
  if (response.headers) {
    out.headers = Object.fromEntries(
      Object.entries(response.headers).map(([name, header]) => [
        name,
        { description: header.description, required: header.required ?? false, schema: inlineSchema(header.schema) },
      ]),
    );
  }
  if (response.schema) {
    out.content = { [response.mediaType ?? 'application/json']: { schema: componentRef(componentName(response.schema)), ...example(response.example) } };
  }
  return out;
}

function operationObject(operation: OperationSpec): JsonSchema {
  const out: JsonSchema = {
    operationId: operation.operationId,
    summary: operation.summary,
    ...(operation.description ? { description: operation.description } : {}),
    tags: [operation.tag],
    security: security(operation),
  };
  const params = parameters(operation);
  if (params.length > 0) out.parameters = params;
  if (operation.requestBody) {
    const body = operation.requestBody;
    out.requestBody = {
      required: body.required ?? true,
      content: { [body.mediaType ?? 'application/json']: { schema: componentRef(componentName(body.schema)), ...example(body.example) } },
    };
  }
  out.responses = Object.fromEntries(Object.entries(operationResponses(operation)).map(([status, response]) => [status, responseObject(response)]));
  return out;
}

function securitySchemes(operations: readonly OperationSpec[]): JsonSchema {
  const kinds = new Set(operations.map((operation) => operation.security.kind));
  const scopes = Object.fromEntries(ALL_SCOPES.map((scope) => [scope, SCOPE_DESCRIPTIONS[scope]]));
  const schemes: JsonSchema = {};
  if (kinds.has('tenant')) {
    schemes.tenantToken = {
      type: 'oauth2',
      description:
        'A tenant bearer token (JWT) from the issuer: the audience is the tenant ID. Tenant identity always comes from the credential (spec, Authentication 2).',
      flows: {
        clientCredentials: { tokenUrl: '/oauth2/token', scopes },
        authorizationCode: {
          authorizationUrl: '/oauth2/auth',
          tokenUrl: '/oauth2/token',
          refreshUrl: '/oauth2/token',
          scopes: {
            ...scopes,
            openid: 'OpenID Connect sign-in (an ID token).',
            profile: 'The user profile.',
            email: 'The user e-mail.',
            offline: 'A refresh token.',
          },
        },
      },
    };
    schemes.apiKey = { type: 'apiKey', in: 'header', name: 'x-api-key', description: 'An organization API key; in the emulator it holds every tenant scope.' };
  }
  if (kinds.has('destination')) {
    schemes.destinationToken = {
      type: 'http',
      scheme: 'bearer',
      description:
        'A protected destination: a destination token (`POST /destinations/{destinationId}/token`) or an issuer token whose audience is the API version ID. Public destinations need none.',
    };
  }
  return schemes;
}

const SCOPE_DESCRIPTIONS: Record<(typeof ALL_SCOPES)[number], string> = {
  'write:sources': 'Typed ingest and legacy import into the granted sources.',
  'import-datasource': 'Legacy import operations of a data provider.',
  'read:events': 'Every events transport: durable consumer pull and acknowledge.',
  'read:events:pull': 'Pull events and inspect metadata (cursor-based pull: not shown by the spec).',
  'read:events:sse': 'Stream events over server-sent events (not shown by the spec).',
};

/** An OpenAPI 3.1 document of `operations`, with only the components they use. */
export function openApiDocument(operations: readonly OperationSpec[], info: DocumentInfo): JsonSchema {
  const paths: Record<string, Record<string, JsonSchema>> = {};
  for (const operation of operations) {
    const item = (paths[operation.path] ??= {});
    item[operation.method.toLowerCase()] = operationObject(operation);
  }
  const all = componentSchemas();
  const used = referencedComponents(paths);
  for (const name of used) referencedComponents(all[name], used);
  const schemas = Object.fromEntries([...used].sort().map((name) => [name, all[name]]));
  const tags = [...new Set(operations.map((operation) => operation.tag))];
  return {
    openapi: '3.1.0',
    info: { title: info.title, version: info.version, description: info.description, license: LICENSE, contact: CONTACT },
    servers: [{ url: info.serverUrl ?? DEFAULT_SERVER_URL, description: 'The durable-worker emulator.' }],
    tags: tags.map((name) => ({ name, description: TAGS[name] })),
    paths,
    components: { schemas, securitySchemes: securitySchemes(operations) },
  };
}

let packageVersion: string | undefined;

/** The package's version: src/emulator/openapi and dist/emulator/openapi both sit three levels below package.json. */
export function emulatorVersion(): string {
  packageVersion ??= (JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
  return packageVersion;
}

/** The whole emulated API: every route the emulator serves. */
export function platformApiDocument(operations: readonly OperationSpec[], serverUrl?: string): JsonSchema {
  return openApiDocument(operations, {
    title: 'Data Platform API (durable-worker emulator)',
    version: emulatorVersion(),
    description: [
      'Every route the durable-worker emulator serves: the Data Platform API of `docs/platform-api.md` (token issuer, ingest, reads,',
      'metadata, managed tags, access catalog, durable consumers, destination tokens and queries) and, tagged `Emulator only`, the',
      "emulator's own seeding endpoints. Where the spec shows no name or shape, the emulator's documented choice is described and",
      'says so (docs/client.md). In the platform the issuer is at `{auth_url}`, destination tokens at `{destinations_url}` and',
      'destination queries at `{global_url}`; the emulator serves them all on one origin.',
    ].join(' '),
    ...(serverUrl ? { serverUrl } : {}),
  });
}

/** Spec, Versioning 4: the ingest interface description has version 1.0.0 and is OpenAPI 3.1. */
export const INGEST_API_VERSION = '1.0.0';
/** The operations of the spec's ingest interface: typed ingest and the legacy import operations. */
export const INGEST_OPERATION_IDS: readonly string[] = ['ingestTyped', 'verifyLegacyImport', 'legacyImport'];

/** The ingest interface description of the spec, from the same declarations as the whole API. */
export function ingestDocument(operations: readonly OperationSpec[], serverUrl?: string): JsonSchema {
  return openApiDocument(
    operations.filter((operation) => INGEST_OPERATION_IDS.includes(operation.operationId)),
    {
      title: 'Data Platform ingest API',
      version: INGEST_API_VERSION,
      description: 'Typed source ingest and the legacy import operations, as implemented by the durable-worker emulator (docs/platform-api.md).',
      ...(serverUrl ? { serverUrl } : {}),
    },
  );
}
