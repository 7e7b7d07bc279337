import type { RedisClientType } from 'redis';
import { redactUrl } from '../observability/redact.js';
import { closeRedis, connectRedis, evalScript, type RedisConnectOptions } from './redis-client.js';
import { CLAIM_SCRIPT, DONE_SCRIPT, RELEASE_SCRIPT, type LuaScript } from './redis-scripts.js';
import type { ClaimState, IdempotencyStore } from './store.js';
import { closedError, storeError } from './store-error.js';

/** Options of the Redis store: the connection's (redis-client.ts), and its key space. */
export interface RedisStoreOptions extends Omit<RedisConnectOptions, 'onBackgroundError'> {
  /** Key namespace: several workers may share one server. */
  prefix: string;
  /** How long done marks are kept, in ms. */
  doneTtlMs: number;
  /** Connection errors seen while reconnecting; the default ignores them. */
  onBackgroundError?: (err: Error) => void;
}

const STATE_BY_LETTER: Record<string, ClaimState> = { n: 'new', d: 'done', b: 'busy' };

/**
 * node-redis 6 client (redis-client.ts: commands fail at once while the connection is down, and it
 * reconnects in the background). Each operation is one EVALSHA of a Lua script over the whole batch
 * (one round trip, atomic).
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
    const onBackgroundError = options.onBackgroundError ?? (() => {});
    let client: RedisClientType;
    try {
      client = await connectRedis({ ...options, onBackgroundError: (err) => onBackgroundError(storeError('redis', 'connection', err)) });
    } catch (err) {
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
    await closeRedis(this.#client);
  }

  async #run(operation: string, script: LuaScript, keys: readonly string[], args: string[]): Promise<unknown> {
    if (this.#closed) throw closedError('redis', operation);
    try {
      return await evalScript(this.#client, script, keys.map((key) => this.#keyPrefix + key), args);
    } catch (err) {
      throw storeError('redis', operation, err);
    }
  }
}
