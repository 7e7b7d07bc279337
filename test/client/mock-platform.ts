import { MockAgent } from 'undici';
import type { Interceptable } from 'undici';

/**
 * An undici MockAgent standing in for the platform and its issuer on one origin, with net connect
 * disabled so any request without an interceptor fails loudly. Used only for exact request shapes
 * and failure injection; behaviour is tested against the real emulator.
 */
export interface MockPlatform {
  agent: MockAgent;
  pool: Interceptable;
  origin: string;
  /** Token requests seen, with their decoded form fields. */
  tokenRequests: Array<Record<string, string>>;
  /** Answers every token request with a fresh token `token-<n>` living `expiresInSeconds`. */
  issueTokens(expiresInSeconds?: number): void;
  close(): Promise<void>;
}

export const SECRET = 'sup3r-s3cret-value';

export function mockPlatform(origin = 'http://platform.test'): MockPlatform {
  const agent = new MockAgent();
  agent.disableNetConnect();
  const pool = agent.get(origin);
  const tokenRequests: Array<Record<string, string>> = [];
  return {
    agent,
    pool,
    origin,
    tokenRequests,
    issueTokens(expiresInSeconds = 3600) {
      pool
        .intercept({ path: '/oauth2/token', method: 'POST' })
        .reply((opts) => {
          tokenRequests.push(Object.fromEntries(new URLSearchParams(String(opts.body))));
          return {
            statusCode: 200,
            data: { access_token: `token-${tokenRequests.length}`, token_type: 'Bearer', expires_in: expiresInSeconds, scope: 'read:events' },
            responseOptions: { headers: { 'content-type': 'application/json' } },
          };
        })
        .persist();
    },
    close: () => agent.close(),
  };
}

export function header(headers: unknown, name: string): string | undefined {
  if (headers === undefined || headers === null) return undefined;
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  const bag = headers as Record<string, string | string[] | undefined>;
  const key = Object.keys(bag).find((candidate) => candidate.toLowerCase() === name.toLowerCase());
  const value = key === undefined ? undefined : bag[key];
  return Array.isArray(value) ? value.join(', ') : value;
}

export const json = { headers: { 'content-type': 'application/json' } };
export const problemJson = { headers: { 'content-type': 'application/problem+json' } };
