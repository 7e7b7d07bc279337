import { Agent } from 'undici';
import { describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.js';
import { OwnAgent, resolveDispatcher } from '../../src/client/lazy-undici.js';
import { ErrorCodes } from '../../src/errors.js';

describe('OwnAgent (the client-owned Agent, created at the first request)', () => {
  it('creates one Agent at the first call and hands out the same one after', async () => {
    const own = new OwnAgent({ connections: 1 });
    const first = await own.get();
    expect(first).toBeInstanceOf(Agent);
    expect(own.get()).toBe(first);
    await own.close();
    expect((first as Agent).closed).toBe(true);
  });

  it('closed before any request: creates no Agent and fails as a closed Agent does', async () => {
    const own = new OwnAgent({});
    await own.close();
    await expect(own.get()).rejects.toMatchObject({ code: 'UND_ERR_CLOSED' });
  });

  it('passes a caller dispatcher through unchanged', () => {
    const agent = new Agent();
    expect(resolveDispatcher(agent)).toBe(agent);
    return agent.close();
  });

  it('a client closed before its first request fails that request as a network error', async () => {
    const client = createClient({ baseUrl: 'http://127.0.0.1:9', apiKey: 'k', retry: false });
    await client.close();
    await expect(client.pull('d', { limit: 1 })).rejects.toMatchObject({ code: ErrorCodes.NETWORK });
  });
});
