import { randomUUID } from 'node:crypto';
import { createClient, type PlatformClient } from '../../src/client/index.js';
import type { RunningEmulator } from '../../src/emulator/index.js';

/** POST to a loopback seeding endpoint of the emulator; throws unless 201. */
export async function seed<T = Record<string, unknown>>(emulator: RunningEmulator, path: string, body: unknown): Promise<T> {
  const res = await fetch(`${emulator.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const text = await res.text();
  if (res.status !== 201) throw new Error(`seeding ${path} answered ${res.status}: ${text}`);
  return JSON.parse(text) as T;
}

export interface TenantApp {
  tenant: string;
  clientId: string;
  clientSecret: string;
  client: PlatformClient;
}

/**
 * A fresh tenant with its own application (a namespace of its own, so tests sharing one emulator
 * never see each other's data), and a client for it. `options` are the application's seeding fields (scopes, sources, dataProvider).
 */
export async function newTenantApp(
  emulator: RunningEmulator,
  options: { scopes?: string[]; sources?: string[] | 'all'; dataProvider?: boolean; tenant?: string } = {},
): Promise<TenantApp> {
  const tenant = options.tenant ?? `t-${randomUUID()}`;
  const clientId = `app-${randomUUID()}`;
  const clientSecret = `secret-${randomUUID()}`;
  await seed(emulator, '/_emulator/applications', {
    tenant,
    clientId,
    clientSecret,
    scopes: options.scopes ?? ['write:sources', 'import-datasource', 'read:events'],
    ...(options.sources ? { sources: options.sources } : {}),
    ...(options.dataProvider ? { dataProvider: true } : {}),
  });
  const client = createClient({ baseUrl: emulator.url, tenant, clientId, clientSecret, retry: { baseDelayMs: 5, maxDelayMs: 20 } });
  return { tenant, clientId, clientSecret, client };
}
