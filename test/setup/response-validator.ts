import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';
import type { EmulatorExchange } from '../../src/emulator/http/exchange-observer.js';
import { openApiDocument, platformApiDocument } from '../../src/emulator/openapi/document.js';
import type { JsonSchema } from '../../src/emulator/openapi/json-schema.js';
import type { OperationSpec } from '../../src/emulator/openapi/operation.js';
import { emulatorOperations } from '../../src/emulator/start.js';

/**
 * Checks one emulator answer against the OpenAPI description of its route: the status is declared
 * (exactly, as a range such as `5XX`, or by `default`), the media type is the declared one, the
 * declared required headers are there and valid, and the body matches the declared schema. The
 * JSON Schemas are compiled with Ajv once per (operation, status), on first use.
 *
 * The description is the emulator's whole-API document, built from the routes' declarations of
 * this source tree; routes a test adds (`modules`) are described by their own declaration.
 */

type Json = Record<string, any>;

interface Described {
  documentId: string;
  pointer: string;
  operation: Json;
}

const escape = (segment: string) => segment.replace(/~/g, '~0').replace(/\//g, '~1');

export class ResponseValidator {
  readonly #ajv = new Ajv2020({ strict: false, allErrors: true });
  readonly #platform: Map<string, Described>;
  readonly #operations = new Map(emulatorOperations().map((operation) => [operation.operationId, operation]));
  readonly #own = new WeakMap<OperationSpec, Described>();
  readonly #compiled = new Map<string, ValidateFunction>();
  #documents = 0;

  constructor() {
    // A CommonJS module: its default export is the plugin.
    (formats as unknown as { default: (ajv: Ajv2020) => void }).default(this.#ajv);
    this.#platform = this.#index(platformApiDocument([...this.#operations.values()]));
  }

  /** Registers a document with Ajv and indexes its operations by operationId. */
  #index(document: JsonSchema): Map<string, Described> {
    const documentId = `openapi-${this.#documents++}`;
    this.#ajv.addSchema(document, documentId);
    const out = new Map<string, Described>();
    for (const [path, item] of Object.entries(document.paths as Json)) {
      for (const [method, operation] of Object.entries(item as Json)) {
        out.set((operation as Json).operationId, { documentId, pointer: `/paths/${escape(path)}/${method}`, operation: operation as Json });
      }
    }
    return out;
  }

  #described(operation: OperationSpec): Described {
    const known = this.#platform.get(operation.operationId);
    if (known !== undefined && known.operation.summary === operation.summary) return known;
    let own = this.#own.get(operation);
    if (own === undefined) {
      own = this.#index(openApiDocument([operation], { title: 'A route added by a test', version: '0', description: operation.summary })).get(
        operation.operationId,
      )!;
      this.#own.set(operation, own);
    }
    return own;
  }

  #validator(documentId: string, pointer: string): ValidateFunction {
    const key = `${documentId}#${pointer}`;
    const known = this.#compiled.get(key);
    if (known !== undefined) return known;
    const validate = this.#ajv.compile({ $ref: key });
    this.#compiled.set(key, validate);
    return validate;
  }

  /** An answer a child process reported (its operation by ID: the emulator's own routes only). */
  checkReported(exchange: Omit<EmulatorExchange, 'operation'> & { operationId?: string }): string | undefined {
    const operation = exchange.operationId === undefined ? undefined : this.#operations.get(exchange.operationId);
    if (exchange.operationId !== undefined && operation === undefined)
      return `${exchange.method} ${exchange.path}: a child process answered from an unknown operation ${exchange.operationId}`;
    return this.check({ ...exchange, operation });
  }

  /** What is wrong with one answer, naming the route and the fields; undefined when it matches its description. */
  check(exchange: EmulatorExchange): string | undefined {
    const [route, problems] = this.#problems(exchange);
    return problems.length === 0 ? undefined : `${route}: ${problems.join('; ')}`;
  }

  #problems(exchange: EmulatorExchange): [string, string[]] {
    if (exchange.operation === undefined) return this.#checkUnrouted(exchange);
    const { documentId, pointer, operation } = this.#described(exchange.operation);
    const route = `${exchange.operation.method} ${exchange.operation.path} (${exchange.operation.operationId}) answered ${exchange.status}`;
    const responses = operation.responses as Json;
    const status = String(exchange.status);
    const key = status in responses ? status : `${status[0]}XX` in responses ? `${status[0]}XX` : 'default' in responses ? 'default' : undefined;
    if (key === undefined) return [route, [`status ${status} is not declared (declared: ${Object.keys(responses).join(', ')})`]];
    const response = responses[key] as Json;
    const at = `${pointer}/responses/${escape(key)}`;
    const problems: string[] = [];
    for (const [name, header] of Object.entries((response.headers ?? {}) as Json)) {
      const value = exchange.headers[name.toLowerCase()];
      if (value === undefined) {
        if (header.required) problems.push(`header ${name} is missing`);
        continue;
      }
      const validate = this.#validator(documentId, `${at}/headers/${escape(name)}/schema`);
      if (!validate(/^-?\d+$/.test(value) ? Number(value) : value)) problems.push(...describe(validate.errors, `header ${name}`, value));
    }
    problems.push(
      ...this.#checkBody(exchange, response.content as Json | undefined, (mediaType) =>
        this.#validator(documentId, `${at}/content/${escape(mediaType)}/schema`),
      ),
    );
    return [route, problems];
  }

  #checkBody(exchange: EmulatorExchange, content: Json | undefined, validatorOf: (mediaType: string) => ValidateFunction): string[] {
    if (content === undefined) return exchange.body === undefined || exchange.body === '' ? [] : ['a body where none is declared'];
    const mediaType = (exchange.headers['content-type'] ?? '').split(';')[0]!.trim();
    if (!(mediaType in content)) return [`content-type ${mediaType || '(none)'} is not the declared ${Object.keys(content).join(' or ')}`];
    if (exchange.body === undefined) return ['no body where one is declared'];
    let body: unknown;
    try {
      body = JSON.parse(exchange.body);
    } catch {
      return [`the body is not JSON: ${exchange.body.slice(0, 80)}`];
    }
    const validate = validatorOf(mediaType);
    return validate(body) ? [] : describe(validate.errors, 'body', body);
  }

  #checkUnrouted(exchange: EmulatorExchange): [string, string[]] {
    const route = `${exchange.method} ${exchange.path} (no route) answered ${exchange.status}`;
    const content = { 'application/problem+json': { schema: { $ref: '#/components/schemas/ProblemDetails' } } };
    const documentId = this.#platform.values().next().value!.documentId;
    return [route, this.#checkBody(exchange, content, () => this.#validator(documentId, '/components/schemas/ProblemDetails'))];
  }
}

/** Ajv errors as `body.events[0].sequence must match pattern ... (got "x")`. */
function describe(errors: ErrorObject[] | null | undefined, root: string, value: unknown): string[] {
  // anyOf reports every branch; the deepest path is the most telling.
  const sorted = [...(errors ?? [])].sort((a, b) => b.instancePath.length - a.instancePath.length);
  const seen = new Set<string>();
  const out: string[] = [];
  for (const error of sorted) {
    const field = root + error.instancePath.replace(/\/(\d+)(?=\/|$)/g, '[$1]').replace(/\//g, '.');
    const extra = error.keyword === 'additionalProperties' ? ` (${(error.params as { additionalProperty: string }).additionalProperty})` : '';
    // A long pattern (a date-time's) says less than its name.
    const text =
      error.keyword === 'pattern' && String((error.params as { pattern: string }).pattern).length > 40 ? 'must match the declared pattern' : error.message;
    const message = `${field} ${text}${extra} (got ${preview(at(value, error.instancePath))})`;
    if (!seen.has(message)) out.push(message);
    seen.add(message);
    if (out.length >= 3) break;
  }
  return out;
}

function at(value: unknown, pointer: string): unknown {
  let current = value;
  for (const segment of pointer.split('/').slice(1)) current = (current as Json | undefined)?.[segment.replace(/~1/g, '/').replace(/~0/g, '~')];
  return current;
}

function preview(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}
