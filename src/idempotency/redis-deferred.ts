import type { RedisClientType } from 'redis';
import type { DeferredReason, DeferredRun, DeferredRuns, DeferredStats } from './deferred.js';
import { distinctRuns } from './deferred-batch.js';
import { evalScript } from './redis-client.js';
import { CHAINS_SCRIPT, DEFER_SCRIPT, DUE_SCRIPT, LIST_SCRIPT, REMOVE_SCRIPT, RESCHEDULE_SCRIPT, STATS_SCRIPT } from './redis-deferred-scripts.js';
import type { LuaScript } from './redis-scripts.js';
import { closedError, storeError } from './store-error.js';

/** What the deferred runs share with the store they live in. */
export interface RedisDeferredOptions {
  client: RedisClientType;
  /** The store's prefix: the keys carry it as the claims do (its length, then it as the hash tag). */
  prefix: string;
  /** Where the store keeps a key's claim or done mark: this, then the key. */
  claimKeyBase: string;
  isClosed: () => boolean;
}

/** A run's header in the runs hash (redis-deferred-scripts.ts): numbers as text, for cjson. */
interface Header {
  k: string;
  h: string;
  c: string;
  s: string;
  m: string;
  r: string;
  d: string;
  w: string;
}

/**
 * Deferred runs in the Redis store's server, under the store's prefix `P` (hash tag `{P}`, so one
 * cluster slot), `dw:defer:<length of P>:{P}:` then:
 * - `runs`: a hash, key -> the run (header, newline, event JSON);
 * - `chain:<chain>`: per chain a sorted set, score 0, member `<sequence member>|<key>`, so its
 *   lexicographic order is stream order and its first member is the head;
 * - `chains`: the chains with runs, score 0 (lexicographic: by handler, then subject: `list`);
 * - `heads`: the chains scored by their head's retryAtMs (`due`, `nextDueAtMs`: O(log n));
 * - `handler:<handler>`: per handler its keys scored by deferredAtMs, and `handlers`, the set of
 *   handlers with runs (`stats`).
 * Each operation is one script (atomic, one round trip) or one command.
 */
export class RedisDeferredRuns implements DeferredRuns {
  readonly #client: RedisClientType;
  readonly #base: string;
  readonly #claimKeyBase: string;
  readonly #keys: string[];
  readonly #isClosed: () => boolean;

  constructor(options: RedisDeferredOptions) {
    this.#client = options.client;
    this.#base = `dw:defer:${options.prefix.length}:{${options.prefix}}:`;
    this.#claimKeyBase = options.claimKeyBase;
    this.#keys = ['runs', 'chains', 'heads', 'handlers'].map((name) => this.#base + name);
    this.#isClosed = options.isClosed;
  }

  async defer(runs: readonly DeferredRun[], owner: string): Promise<void> {
    if (runs.length === 0) return;
    const args = [this.#base, this.#claimKeyBase, owner];
    for (const run of distinctRuns(runs)) {
      const member = sequenceMember(run.sequence, run.key);
      const header: Header = {
        k: run.key,
        h: run.handler,
        c: run.chain,
        s: run.sequence,
        m: member,
        r: String(run.retryAtMs),
        d: String(run.deferredAtMs),
        w: run.reason,
      };
      const value = `${JSON.stringify(header)}\n${JSON.stringify(run.event)}`;
      args.push(run.key, run.handler, run.chain, member, header.r, header.d, run.reason, value);
    }
    await this.#run('defer', DEFER_SCRIPT, args);
  }

  async chainsWithRuns(chains: readonly string[]): Promise<Set<string>> {
    if (chains.length === 0) return new Set();
    const positions = (await this.#run('chainsWithRuns', CHAINS_SCRIPT, [this.#base, ...chains])) as number[];
    return new Set(positions.map((position) => chains[Number(position) - 1] as string));
  }

  async due(nowMs: number, limit: number, skipHandlers?: ReadonlySet<string>): Promise<DeferredRun[]> {
    if (limit <= 0) return [];
    const values = (await this.#run('due', DUE_SCRIPT, [this.#base, String(nowMs), String(limit), ...(skipHandlers ?? [])])) as string[];
    return values.map(parseRun);
  }

  async nextDueAtMs(): Promise<number | undefined> {
    const [first] = await this.#command('nextDueAtMs', () => this.#client.zRangeWithScores(this.#keys[2] as string, 0, 0));
    return first?.score;
  }

  async remove(keys: readonly string[]): Promise<void> {
    if (keys.length === 0) return;
    await this.#run('remove', REMOVE_SCRIPT, [this.#base, ...keys]);
  }

  async reschedule(key: string, retryAtMs: number): Promise<boolean> {
    return Number(await this.#run('reschedule', RESCHEDULE_SCRIPT, [this.#base, key, String(retryAtMs)])) === 1;
  }

  async list(options: { handler?: string; limit: number }): Promise<DeferredRun[]> {
    if (options.limit <= 0) return [];
    // A handler's chains are the lexicographic range [handler\0, handler\x01).
    const [min, max] = options.handler === undefined ? ['-', '+'] : [`[${options.handler}\u0000`, `(${options.handler}\u0001`];
    const values = (await this.#run('list', LIST_SCRIPT, [this.#base, String(options.limit), min, max])) as string[];
    return values.map(parseRun);
  }

  async get(key: string): Promise<DeferredRun | undefined> {
    const value = await this.#command('get', () => this.#client.hGet(this.#keys[0] as string, key));
    return value === null || value === undefined ? undefined : parseRun(String(value));
  }

  async stats(): Promise<Map<string, DeferredStats>> {
    const flat = (await this.#run('stats', STATS_SCRIPT, [this.#base])) as unknown[];
    const stats = new Map<string, DeferredStats>();
    for (let i = 0; i + 2 < flat.length; i += 3) {
      stats.set(String(flat[i]), { count: Number(flat[i + 1]), oldestDeferredAtMs: Number(flat[i + 2]) });
    }
    return stats;
  }

  async #run(operation: string, script: LuaScript, args: string[]): Promise<unknown> {
    return this.#command(operation, () => evalScript(this.#client, script, this.#keys, args));
  }

  async #command<T>(operation: string, command: () => Promise<T>): Promise<T> {
    if (this.#isClosed()) throw closedError('redis', operation);
    try {
      return await command();
    } catch (err) {
      throw storeError('redis', operation, err);
    }
  }
}

/**
 * A chain member that sorts in stream order: the sequence's length (4 digits), the sequence, `|`,
 * the key. Sequences are decimal strings without a bound on their length (compareSequences), so
 * the length goes first rather than a padding to some fixed width.
 */
function sequenceMember(sequence: string, key: string): string {
  return `${String(sequence.length).padStart(4, '0')}${sequence}|${key}`;
}

function parseRun(value: string): DeferredRun {
  const cut = value.indexOf('\n');
  const header = JSON.parse(value.slice(0, cut)) as Header;
  return {
    key: header.k,
    handler: header.h,
    chain: header.c,
    sequence: header.s,
    event: JSON.parse(value.slice(cut + 1)) as DeferredRun['event'],
    retryAtMs: Number(header.r),
    deferredAtMs: Number(header.d),
    reason: header.w as DeferredReason,
  };
}
