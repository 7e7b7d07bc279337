import type { RedisClientType } from 'redis';
import { importOptional } from '../runtime/optional-package.js';
import type { LuaScript } from './redis-scripts.js';

/** How the Redis adapters (idempotency store, dead-letter sink) connect. */
export interface RedisConnectOptions {
  /** `redis://[[user]:password@]host[:port][/db]` or `rediss://` for TLS. */
  url: string;
  /** A command without a reply after this long fails, in ms (default 5,000). */
  commandTimeoutMs?: number;
  /** Connection attempts before the first connect gives up (default 3). Later, it retries forever. */
  initialConnectAttempts?: number;
  /** Longest pause between reconnection attempts, in ms (default 2,000). */
  maxReconnectDelayMs?: number;
  /** Connection errors seen while reconnecting; the default ignores them. */
  onBackgroundError?: (err: unknown) => void;
}

/**
 * A node-redis 6 client, connected. While the connection is down, commands are rejected at once
 * instead of queued (`disableOfflineQueue`): the worker then fails those events and the platform
 * redelivers them, rather than the worker hanging on a queue that may never drain. Reconnection goes
 * on in the background with capped exponential backoff. Rejects with the driver's error when the
 * first connection fails (a wrong host or password at start is a configuration problem).
 */
export async function connectRedis(options: RedisConnectOptions): Promise<RedisClientType> {
  const { createClient } = await importOptional('redis', 'a redis:// store', '--idempotency', () => import('redis'));
  const initialAttempts = options.initialConnectAttempts ?? 3;
  const maxDelayMs = options.maxReconnectDelayMs ?? 2_000;
  const onBackgroundError = options.onBackgroundError ?? (() => {});
  let everReady = false;
  const client = createClient({
    url: options.url,
    disableOfflineQueue: true,
    commandOptions: { timeout: options.commandTimeoutMs ?? 5_000 },
    socket: {
      connectTimeout: options.commandTimeoutMs ?? 5_000,
      reconnectStrategy: (retries: number, cause: Error) => {
        if (!everReady && retries >= initialAttempts - 1) return cause;
        const backoffMs = Math.min(maxDelayMs, 50 * 2 ** retries);
        return Math.round(backoffMs / 2 + Math.random() * (backoffMs / 2));
      },
    },
  }) as unknown as RedisClientType;
  // Without a listener an 'error' event would crash the process; a down server is expected.
  client.on('error', (err: Error) => {
    if (everReady) onBackgroundError(err);
  });
  client.on('ready', () => {
    everReady = true;
  });
  try {
    await client.connect();
  } catch (err) {
    client.destroy();
    throw err;
  }
  return client;
}

/** Closes a client, waiting for replies in flight (destroy() would reject them). */
export async function closeRedis(client: RedisClientType): Promise<void> {
  try {
    await client.close();
  } catch {
    client.destroy();
  }
}

/** EVALSHA, falling back to EVAL (which also caches the script) after a server restart. */
export async function evalScript(client: RedisClientType, script: LuaScript, keys: string[], args: string[]): Promise<unknown> {
  const call = { keys, arguments: args };
  try {
    return await client.evalSha(script.sha1, call);
  } catch (err) {
    if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
    return await client.eval(script.source, call);
  }
}
