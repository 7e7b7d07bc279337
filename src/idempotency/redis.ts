import type { RedisClientType } from 'redis';
import { redactUrl } from '../observability/redact.js';
import { CLAIM_SCRIPT, DONE_SCRIPT, RELEASE_SCRIPT, type LuaScript } from './redis-scripts.js';
import type { ClaimState, IdempotencyStore } from './store.js';
import { closedError, storeError } from './store-error.js';

/** Options of the Redis store. */
export interface RedisStoreOptions {
  /** `redis://[[user]:password@]host[:port][/db]` or `rediss://` for TLS. */
  url: string;
  /** Key namespace: several workers may share one server. */
  prefix: string;
  /** How long done marks are kept, in ms. */
  doneTtlMs: number;
  /** A command without a reply after this long fails, in ms (default 5,000). */
  commandTimeoutMs?: number;
  /** Connection attempts before the first connect gives up (default 3). Later, it retries forever. */
  initialConnectAttempts?: number;
  /** Longest pause between reconnection attempts, in ms (default 2,000). */
  maxReconnectDelayMs?: number;
  /** Connection errors seen while reconnecting; the default ignores them. */
  onBackgroundError?: (err: Error) => void;
}

const STATE_BY_LETTER: Record<string, ClaimState> = { n: 'new', d: 'done', b: 'busy' };

/**
 * node-redis 6 client. Each operation is one EVALSHA of a Lua script over the whole batch (one
 * round trip, atomic). While the connection is down, commands are rejected at once instead of
 * queued (`disableOfflineQueue`): the worker then fails those events and the platform redelivers
 * them, rather than the worker hanging on a queue that may never drain. Reconnection goes on in
 * the background with capped exponential backoff.
 */
export class RedisIdempotencyStore implements IdempotencyStore {
  readonly #client: RedisClientType;
  readonly #keyPrefix: string;
  readonly #doneTtlMs: number;
  #closed = false;

  private constructor(client: RedisClientType, options: RedisStoreOptions) {
    this.#client = client;
    // The length makes the encoding unambiguous (prefix `a:b` + key `c` never meets prefix `a` +
    // key `b:c`); the braces are a cluster hash tag that keeps a prefix's keys in one slot, as a
    // multi-key script requires there.
    this.#keyPrefix = `dw:idem:${options.prefix.length}:{${options.prefix}}:`;
    this.#doneTtlMs = options.doneTtlMs;
  }

  static async open(options: RedisStoreOptions): Promise<RedisIdempotencyStore> {
    const { createClient } = await import('redis');
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
          // A wrong host or password at start is a configuration problem: fail `open` soon.
          if (!everReady && retries >= initialAttempts - 1) return cause;
          const backoffMs = Math.min(maxDelayMs, 50 * 2 ** retries);
          return Math.round(backoffMs / 2 + Math.random() * (backoffMs / 2));
        },
      },
    }) as unknown as RedisClientType;
    // Without a listener an 'error' event would crash the process; a down server is expected.
    client.on('error', (err: Error) => {
      if (everReady) onBackgroundError(storeError('redis', 'connection', err));
    });
    client.on('ready', () => {
      everReady = true;
    });
    try {
      await client.connect();
    } catch (err) {
      client.destroy();
      throw storeError('redis', `connecting to ${redactUrl(options.url)}`, err);
    }
    return new RedisIdempotencyStore(client, options);
  }

  async claim(keys: readonly string[], owner: string, claimTtlMs: number): Promise<ClaimState[]> {
    if (keys.length === 0) return [];
    const reply = await this.#run('claim', CLAIM_SCRIPT, keys, [owner, String(Math.max(1, Math.ceil(claimTtlMs)))]);
    const letters = String(reply);
    if (letters.length !== keys.length) {
      throw storeError('redis', 'claim', new Error(`script answered ${letters.length} states for ${keys.length} keys`));
    }
    // A key repeated in one batch is claimed by its first occurrence, then seen as the same
    // owner's claim: 'new' both times, like the other adapters.
    return [...letters].map((letter) => STATE_BY_LETTER[letter] ?? 'busy');
  }

  async markDone(keys: readonly string[]): Promise<void> {
    if (keys.length === 0) return;
    await this.#run('markDone', DONE_SCRIPT, keys, [String(Math.max(1, Math.ceil(this.#doneTtlMs)))]);
  }

  async release(keys: readonly string[], owner: string): Promise<void> {
    if (keys.length === 0) return;
    await this.#run('release', RELEASE_SCRIPT, keys, [owner]);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    try {
      // close() waits for replies in flight; destroy() would reject them.
      await this.#client.close();
    } catch {
      this.#client.destroy();
    }
  }

  /** EVALSHA, falling back to EVAL (which also caches the script) after a server restart. */
  async #run(operation: string, script: LuaScript, keys: readonly string[], args: string[]): Promise<unknown> {
    if (this.#closed) throw closedError('redis', operation);
    const call = { keys: keys.map((key) => this.#keyPrefix + key), arguments: args };
    try {
      try {
        return await this.#client.evalSha(script.sha1, call);
      } catch (err) {
        if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
        return await this.#client.eval(script.source, call);
      }
    } catch (err) {
      throw storeError('redis', operation, err);
    }
  }
}
