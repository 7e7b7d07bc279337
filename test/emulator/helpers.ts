import { request } from 'undici';
import { startEmulator, type EmulatorOptions, type RunningEmulator } from '../../src/emulator/index.js';
import type { Method, OperationSpec, ResponseSpec } from '../../src/emulator/openapi/operation.js';
import type { AckResponse, LeaseBatch } from '../../src/types.js';

/** The declaration of a route a test adds to an emulator (`modules`): no credential, answers 204 unless told. */
export function testOperation(method: Method, path: string, responses: Record<string, ResponseSpec> = { '204': { description: 'Done.' } }): OperationSpec {
  return {
    method,
    path,
    operationId: `test ${method} ${path}`,
    summary: 'A route added by a test.',
    tag: 'Emulator only',
    security: { kind: 'none' },
    responses,
  };
}

/** An HTTP answer with the body parsed when it is JSON. */
export interface Answer<T = unknown> {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: T;
  text: string;
}

export async function call<T = any>(
  method: 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH',
  url: string,
  options: { headers?: Record<string, string>; json?: unknown; body?: string | Buffer } = {},
): Promise<Answer<T>> {
  const headers = { ...options.headers };
  let body = options.body;
  if (options.json !== undefined) {
    headers['content-type'] ??= 'application/json';
    body = JSON.stringify(options.json);
  }
  const res = await request(url, { method, headers, body });
  const text = await res.body.text();
  const type = String(res.headers['content-type'] ?? '');
  return { status: res.statusCode, headers: res.headers, text, body: (type.includes('json') && text !== '' ? JSON.parse(text) : undefined) as T };
}

export async function tokenFor(
  url: string,
  form: Record<string, string> = {},
): Promise<Answer<{ access_token: string; token_type: string; expires_in: number; scope: string; error?: string; error_description?: string }>> {
  const fields = { grant_type: 'client_credentials', client_id: 'dev-client', client_secret: 'dev-secret', audience: 'dev-tenant', ...form };
  return call('POST', `${url}/oauth2/token`, {
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString(),
  });
}

/** A started emulator with a dev token and pull/ack shortcuts for one destination. */
export interface TestEmulator {
  em: RunningEmulator;
  token: string;
  auth: Record<string, string>;
  append(count: number, tenant?: string): void;
  pull(query?: Record<string, string | number>, destination?: string): Promise<Answer<LeaseBatch & { errors?: Record<string, string[]> }>>;
  ack(body: unknown, destination?: string): Promise<Answer<AckResponse & { errors?: Record<string, string[]> }>>;
  close(): Promise<void>;
}

export async function startTestEmulator(options: EmulatorOptions = {}): Promise<TestEmulator> {
  const em = await startEmulator({ port: 0, ...options });
  const token = await tokenFor(em.url);
  if (token.status !== 200) throw new Error(`token request failed: ${token.text}`);
  const auth = { authorization: `Bearer ${token.body.access_token}` };
  let appended = 0;
  return {
    em,
    token: token.body.access_token,
    auth,
    append(count, tenant = 'dev-tenant') {
      const events = Array.from({ length: count }, () => ({ type: 'test.event', subject: `s-${++appended}`, data: { n: appended } }));
      em.appendEvents(tenant, events);
    },
    pull(query = {}, destination = 'dev-consumer') {
      const qs = new URLSearchParams(Object.entries(query).map(([k, v]): [string, string] => [k, String(v)])).toString();
      return call('POST', `${em.url}/v1/event-destinations/${destination}/pull${qs ? `?${qs}` : ''}`, { headers: auth });
    },
    ack(body, destination = 'dev-consumer') {
      return call('POST', `${em.url}/v1/event-destinations/${destination}/acknowledge`, { headers: auth, json: body });
    },
    close: () => em.close(),
  };
}

export function sequences(batch: LeaseBatch): number[] {
  return batch.events.map((e) => Number(e.sequence));
}
