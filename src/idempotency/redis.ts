import type { RedisClientType } from 'redis';
import { redactUrl } from '../runtime/redact-url.js';
import { closeRedis, connectRedis, evalScript, type RedisConnectOptions } from './redis-client.js';
import { CLAIM_SCRIPT, DEAD_LETTERED_SCRIPT, DONE_SCRIPT, RECORD_FAILURES_SCRIPT, RELEASE_SCRIPT, type LuaScript } from './redis-scripts.js';
import type { ClaimResult, ClaimState, FailureEntry, FailureHistory, IdempotencyStore } from './store.js';
import { closedError, distinctKeys, storeError } from './store-error.js';
import { deadLetteredKey } from './key.js';
import type { DeferredRuns } from './deferred.js';
import { RedisDeferredRuns } from './redis-deferred.js';
import type { PermitStore } from './permits.js';
import { RedisPermits } from './redis-permits.js';

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
  /** Runs waiting outside their lease, on this server under this prefix (docs/stores.md, "Deferred runs"). */
  readonly deferred: DeferredRuns;
  /** The handlers' limits, shared by every process on this server and prefix. */
  readonly permits: PermitStore;
  readonly #client: RedisClientType;
  readonly #keyPrefix: string;
  /** The hash of the prefix's failure histories (redis-scripts.ts says why one hash). */
  readonly #historiesKey: string;
  readonly #doneTtlMs: number;
  #closed = false;

  private constructor(client: RedisClientType, options: RedisStoreOptions) {
    this.#client = client;
    // The length makes the encoding unambiguous (prefix `a:b` + key `c` never meets prefix `a` +
    // key `b:c`); the braces are a cluster hash tag that keeps a prefix's keys in one slot, as a
    // multi-key script requires there.
    this.#keyPrefix = `dw:idem:${options.prefix.length}:{${options.prefix}}:`;
    this.#historiesKey = `dw:fail:${options.prefix.length}:{${options.prefix}}`;
    this.#doneTtlMs = options.doneTtlMs;
    this.deferred = new RedisDeferredRuns({ client, prefix: options.prefix, claimKeyBase: this.#keyPrefix, isClosed: () => this.#closed });
    this.permits = new RedisPermits(client, options.prefix, () => this.#closed);
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

  async claim(keys: readonly string[], owner: string, claimTtlMs: number): Promise<ClaimResult> {
    if (keys.length === 0) return { states: [], failures: undefined };
    const reply = String(await this.#run('claim', CLAIM_SCRIPT, keys, true, [owner, String(Math.max(1, Math.ceil(claimTtlMs)))]));
    if (reply.length < keys.length || (reply.length > keys.length && reply[keys.length] !== '|')) {
      throw storeError('redis', 'claim', new Error(`script answered ${reply.length} states for ${keys.length} keys`));
    }
    // A key repeated in one batch is claimed by its first occurrence, then seen as the same
    // owner's claim: 'new' both times, like the other adapters.
    const states = new Array<ClaimState>(keys.length);
    for (let i = 0; i < keys.length; i++) states[i] = STATE_BY_LETTER[reply[i] as string] ?? 'busy';
    return { states, failures: reply.length === keys.length ? undefined : parseHistories(reply.slice(keys.length + 1), keys.length) };
  }

  async recordFailures(entries: readonly FailureEntry[], owner: string): Promise<number[]> {
    if (entries.length === 0) return [];
    const args = [owner, String(Math.max(1, Math.ceil(this.#doneTtlMs)))];
    for (const entry of entries) args.push(String(Math.round(entry.failedAtMs)), String(Math.round(entry.retryAtMs)));
    const reply = await this.#run(
      'recordFailures',
      RECORD_FAILURES_SCRIPT,
      entries.map((entry) => entry.key),
      true,
      args,
    );
    if (!Array.isArray(reply) || reply.length !== entries.length) {
      throw storeError(
        'redis',
        'recordFailures',
        new Error(`script answered ${Array.isArray(reply) ? reply.length : typeof reply} counts for ${entries.length} keys`),
      );
    }
    return reply.map(Number);
  }

  async markDone(keys: readonly string[]): Promise<void> {
    if (keys.length === 0) return;
    await this.#run('markDone', DONE_SCRIPT, keys, true, [String(Math.max(1, Math.ceil(this.#doneTtlMs)))]);
  }

  async markDeadLettered(keys: readonly string[]): Promise<void> {
    if (keys.length === 0) return;
    const unique = distinctKeys(keys);
    await this.#run('markDeadLettered', DEAD_LETTERED_SCRIPT, [...unique, ...unique.map(deadLetteredKey)], true, [
      String(Math.max(1, Math.ceil(this.#doneTtlMs))),
    ]);
  }

  async release(keys: readonly string[], owner: string): Promise<void> {
    if (keys.length === 0) return;
    await this.#run('release', RELEASE_SCRIPT, keys, false, [owner]);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await closeRedis(this.#client);
  }

  /** Runs a script over the batch's keys, followed by the histories hash when `withHistories`. */
  async #run(operation: string, script: LuaScript, keys: readonly string[], withHistories: boolean, args: string[]): Promise<unknown> {
    if (this.#closed) throw closedError('redis', operation);
    const names = keys.map((key) => this.#keyPrefix + key);
    if (withHistories) names.push(this.#historiesKey);
    try {
      return await evalScript(this.#client, script, names, args);
    } catch (err) {
      throw storeError('redis', operation, err);
    }
  }
}

/** `<position>:<failures>:<retryAtMs>:<firstFailedAtMs>:<lastFailedAtMs>` items joined by `|`, positions 1-based. */
function parseHistories(text: string, count: number): (FailureHistory | undefined)[] {
  const failures = new Array<FailureHistory | undefined>(count);
  for (const item of text.split('|')) {
    const [position, failureCount, retryAtMs, firstFailedAtMs, lastFailedAtMs] = item.split(':').map(Number);
    failures[(position as number) - 1] = {
      failures: failureCount as number,
      retryAtMs: retryAtMs as number,
      firstFailedAtMs: firstFailedAtMs as number,
      lastFailedAtMs: lastFailedAtMs as number,
    };
  }
  return failures;
}
