import { randomUUID } from 'node:crypto';
import { startEmulator, type EmulatorOptions, type RunningEmulator } from '../../src/emulator/index.js';
import type { CloudEvent, LeaseBatch } from '../../src/types.js';
import { call, tokenFor, type Answer } from './helpers.js';

/** The real emulator on port 0 with shortcuts for the sources API (tests of src/emulator/sources). */
export interface SourcesTestbed {
  em: RunningEmulator;
  url: string;
  /** Bearer header of `dev-client` holding every scope. */
  auth: Record<string, string>;
  /** A fresh source id (unique namespace per test). */
  newSourceId(): string;
  ingest(sourceId: string, body: unknown, headers?: Record<string, string>): Promise<Answer<any>>;
  ingestRaw(sourceId: string, text: string, headers?: Record<string, string>): Promise<Answer<any>>;
  /** Ingest that must be accepted, then waits until it has been applied. */
  ingestApplied(sourceId: string, body: unknown): Promise<Answer<any>>;
  readMany(sourceId: string, ids: string[], headers?: Record<string, string>): Promise<Answer<any>>;
  readOne(sourceId: string, entryId: string, headers?: Record<string, string>): Promise<Answer<any>>;
  putProperty(sourceId: string, propertyId: string, body: unknown, headers?: Record<string, string>): Promise<Answer<any>>;
  patchSource(sourceId: string, body: unknown, headers?: Record<string, string>): Promise<Answer<any>>;
  /** Bearer header of a new token of `dev-client` (or `form` overrides), e.g. with one scope. */
  bearer(form?: Record<string, string>): Promise<Record<string, string>>;
  /** Registers an application and returns its bearer header. */
  application(init: { scopes: string[]; sources?: string[] | 'all'; dataProvider?: boolean }): Promise<Record<string, string>>;
  /** A new durable consumer (starts at the head of the stream). */
  newConsumer(): Promise<string>;
  /** Pulls and acknowledges until caught up; returns every event. */
  drain(consumer: string): Promise<CloudEvent[]>;
  close(): Promise<void>;
}

export async function startSourcesTestbed(options: EmulatorOptions = {}): Promise<SourcesTestbed> {
  const em = await startEmulator({ port: 0, ...options });
  const url = em.url;
  const bearer = async (form: Record<string, string> = {}): Promise<Record<string, string>> => {
    const token = await tokenFor(url, form);
    if (token.status !== 200) throw new Error(`token request failed: ${token.text}`);
    return { authorization: `Bearer ${token.body.access_token}` };
  };
  const auth = await bearer();
  const path = (sourceId: string) => `${url}/v1/sources/${encodeURIComponent(sourceId)}`;

  const testbed: SourcesTestbed = {
    em,
    url,
    auth,
    newSourceId: () => `src-${randomUUID()}`,
    ingest: (sourceId, body, headers = auth) => call('POST', `${url}/sources/${encodeURIComponent(sourceId)}`, { headers, json: body }),
    ingestRaw: (sourceId, text, headers = auth) =>
      call('POST', `${url}/sources/${encodeURIComponent(sourceId)}`, { headers: { 'content-type': 'application/json', ...headers }, body: text }),
    async ingestApplied(sourceId, body) {
      const answer = await testbed.ingest(sourceId, body);
      if (answer.status !== 202) throw new Error(`ingest answered ${answer.status}: ${answer.text}`);
      await em.idle();
      return answer;
    },
    readMany: (sourceId, ids, headers = auth) => {
      const query = new URLSearchParams(ids.map((id): [string, string] => ['id', id])).toString();
      return call('GET', `${path(sourceId)}/entries${query ? `?${query}` : ''}`, { headers });
    },
    readOne: (sourceId, entryId, headers = auth) => call('GET', `${path(sourceId)}/entries/${encodeURIComponent(entryId)}`, { headers }),
    putProperty: (sourceId, propertyId, body, headers = auth) =>
      call('PUT', `${path(sourceId)}/properties/${encodeURIComponent(propertyId)}`, { headers, json: body }),
    patchSource: (sourceId, body, headers = auth) => call('PATCH', path(sourceId), { headers, json: body }),
    bearer,
    async application(init) {
      const clientId = `app-${randomUUID()}`;
      const clientSecret = `secret-${randomUUID()}`;
      const created = await call('POST', `${url}/_emulator/applications`, { json: { clientId, clientSecret, ...init } });
      if (created.status !== 201) throw new Error(`application not created: ${created.text}`);
      const scope = init.scopes.join(' ');
      return bearer({ client_id: clientId, client_secret: clientSecret, ...(scope ? { scope } : {}) });
    },
    async newConsumer() {
      const id = `consumer-${randomUUID()}`;
      const created = await call('POST', `${url}/_emulator/tenants/dev-tenant/event-destinations`, { json: { id, type: 'DURABLE_CONSUMER' } });
      if (created.status !== 201) throw new Error(`consumer not created: ${created.text}`);
      return id;
    },
    async drain(consumer) {
      const events: CloudEvent[] = [];
      for (;;) {
        const pulled = await call<LeaseBatch>('POST', `${url}/v1/event-destinations/${consumer}/pull?limit=100`, { headers: auth });
        if (pulled.status === 204) return events;
        if (pulled.status !== 200) throw new Error(`pull answered ${pulled.status}: ${pulled.text}`);
        events.push(...pulled.body.events);
        const { leaseId, generation } = pulled.body;
        const acked = await call('POST', `${url}/v1/event-destinations/${consumer}/acknowledge`, {
          headers: auth,
          json: { leaseId, generation, status: 'ok' },
        });
        if (acked.status !== 200) throw new Error(`acknowledge answered ${acked.status}: ${acked.text}`);
      }
    },
    close: () => em.close(),
  };
  return testbed;
}

/** One entry of a typed ingest request. */
export function entry(id: string, properties: Array<{ id: string; value: unknown; language?: string }>) {
  return { id, properties };
}

/** The property items of a read entry as `id[@language] -> value`, to compare in one assertion. */
export function valuesOf(readEntry: { properties: Array<{ id: string; language: string | null; value: unknown }> }): Record<string, unknown> {
  return Object.fromEntries(readEntry.properties.map((p) => [p.language === null ? p.id : `${p.id}@${p.language}`, p.value]));
}
