import type { RedisClientType } from 'redis';
import { closeRedis, connectRedis, evalScript } from '../idempotency/redis-client.js';
import { redactUrl } from '../runtime/redact-url.js';
import { closedSinkError, noPrefixError, sinkError } from './errors.js';
import { matchesQuery, type PageKey, type StoreQuery } from './query.js';
import { deadLetteredAtMs, toStored } from './record.js';
import { UPDATE_SCRIPT, WRITE_SCRIPT } from './redis-scripts.js';
import type { DeadLetterReason, DeadLetterRecord, DeadLetterState, StoredDeadLetter } from './sink.js';
import type { DeadLetterCount, DeadLetterStore } from './store.js';

/**
 * Every key of the sink carries one cluster hash tag: a write changes a record, the index and the
 * counts in one atomic script, which a cluster allows only within one slot. Dead letters are few;
 * one slot holds them all.
 */
const BASE = 'dw:dlq:{dead-letters}:';
/** ZSET of every record, all at score 0, ordered by member: `<deadLetteredAt ms, 15 digits>|<prefix length>:<prefix>:<id>`. */
const INDEX_KEY = `${BASE}index`;
/** SET of the prefixes that have records (a lookup by id across prefixes, a count of all). */
const PREFIXES_KEY = `${BASE}prefixes`;
/** Members read per round trip while a listing filters. */
const SCAN_CHUNK = 500;

const scoped = (prefix: string) => `${prefix.length}:${prefix}`;
const recordKey = (prefix: string, id: string) => `${BASE}record:${scoped(prefix)}:${id}`;
const countsKey = (prefix: string) => `${BASE}dead-counts:${scoped(prefix)}`;
const member = (key: PageKey) => `${String(Math.max(0, Math.floor(key.atMs))).padStart(15, '0')}|${scoped(key.prefix)}:${key.id}`;
/** The record key of an index member: everything after the time. */
const recordKeyOfMember = (value: string) => `${BASE}record:${value.slice(16)}`;

/**
 * `redis://`: each record is a hash (`state`, its index `member`, its `count` field, the record as
 * `json`); the index orders them for paging (ZRANGE BYLEX: keyset pages, time ranges as member
 * ranges); `dead-counts:<prefix>` holds how many are `dead` per handler and reason, kept exact by
 * the scripts that change a state, so the gauge costs one HGETALL. Records never expire: they are
 * the only copy of an event the platform has moved past. As durable as the server's persistence
 * (use AOF).
 */
export class RedisDeadLetterStore implements DeadLetterStore {
  readonly #client: RedisClientType;
  readonly #prefix: string | undefined;
  #closed = false;

  private constructor(client: RedisClientType, prefix: string | undefined) {
    this.#client = client;
    this.#prefix = prefix;
  }

  static async open(options: { url: string; prefix: string | undefined; onBackgroundError?: (err: Error) => void }): Promise<RedisDeadLetterStore> {
    const onBackgroundError = options.onBackgroundError ?? (() => {});
    try {
      const client = await connectRedis({ url: options.url, onBackgroundError: (err) => onBackgroundError(sinkError('redis', 'connection', err)) });
      return new RedisDeadLetterStore(client, options.prefix);
    } catch (err) {
      throw sinkError('redis', `connecting to ${redactUrl(options.url)}`, err);
    }
  }

  async write(record: DeadLetterRecord): Promise<void> {
    if (this.#prefix === undefined) throw noPrefixError('redis');
    const stored = toStored(record, this.#prefix);
    const keys = [recordKey(stored.prefix, stored.id), INDEX_KEY, countsKey(stored.prefix), PREFIXES_KEY];
    const at = { atMs: deadLetteredAtMs(stored), prefix: stored.prefix, id: stored.id };
    await this.#run('write', () =>
      evalScript(this.#client, WRITE_SCRIPT, keys, [JSON.stringify(stored), member(at), countField(stored.handler, stored.reason), stored.prefix]),
    );
  }

  async list(query: StoreQuery): Promise<StoredDeadLetter[]> {
    // The time range and the page start are a range of members; the rest is filtered here.
    const { after, since, until, ...rest } = query;
    let from = since === undefined ? '-' : `[${member({ atMs: since.getTime(), prefix: '', id: '' })}`;
    if (after !== undefined && (since === undefined || after.atMs >= since.getTime())) from = `(${member(after)}`;
    const to = until === undefined ? '+' : `(${member({ atMs: until.getTime(), prefix: '', id: '' })}`;
    const out: StoredDeadLetter[] = [];
    while (out.length < query.limit) {
      const members = await this.#run('list', () => this.#client.zRange(INDEX_KEY, from, to, { BY: 'LEX', LIMIT: { offset: 0, count: SCAN_CHUNK } }));
      if (members.length === 0) break;
      const texts = await this.#run('list', () => Promise.all(members.map((m) => this.#client.hGet(recordKeyOfMember(m), 'json'))));
      for (const text of texts) {
        if (text === null || text === undefined) continue; // removed between the two reads
        const record = JSON.parse(text) as StoredDeadLetter;
        if (matchesQuery(record, rest, this.#prefix)) out.push(record);
        if (out.length === query.limit) break;
      }
      if (members.length < SCAN_CHUNK) break;
      from = `(${members[members.length - 1] as string}`;
    }
    return out;
  }

  async get(id: string): Promise<StoredDeadLetter[]> {
    const prefixes = this.#prefix !== undefined ? [this.#prefix] : (await this.#run('get', () => this.#client.sMembers(PREFIXES_KEY))).sort();
    const texts = await this.#run('get', () => Promise.all(prefixes.map((prefix) => this.#client.hGet(recordKey(prefix, id), 'json'))));
    return texts.filter((text): text is string => typeof text === 'string').map((text) => JSON.parse(text) as StoredDeadLetter);
  }

  async update(next: StoredDeadLetter, expected: DeadLetterState): Promise<boolean> {
    const keys = [recordKey(next.prefix, next.id), countsKey(next.prefix)];
    const changed = await this.#run('update', () => evalScript(this.#client, UPDATE_SCRIPT, keys, [expected, next.state, JSON.stringify(next)]));
    return Number(changed) === 1;
  }

  async countDead(): Promise<DeadLetterCount[]> {
    const prefixes = this.#prefix !== undefined ? [this.#prefix] : await this.#run('count', () => this.#client.sMembers(PREFIXES_KEY));
    const hashes = await this.#run('count', () => Promise.all(prefixes.map((prefix) => this.#client.hGetAll(countsKey(prefix)))));
    const totals = new Map<string, number>();
    for (const hash of hashes) for (const [field, count] of Object.entries(hash)) totals.set(field, (totals.get(field) ?? 0) + Number(count));
    return [...totals].filter(([, count]) => count > 0).map(([field, count]) => ({ ...parseCountField(field), count }));
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await closeRedis(this.#client);
  }

  async #run<T>(operation: string, command: () => Promise<T>): Promise<T> {
    if (this.#closed) throw closedSinkError('redis', operation);
    try {
      return await command();
    } catch (err) {
      throw sinkError('redis', operation, err);
    }
  }
}

function countField(handler: string, reason: DeadLetterReason): string {
  return JSON.stringify([handler, reason]);
}

function parseCountField(field: string): { handler: string; reason: DeadLetterReason } {
  const [handler, reason] = JSON.parse(field) as [string, DeadLetterReason];
  return { handler, reason };
}
