import { randomUUID } from 'node:crypto';
import type { RedisClientType } from 'redis';
import { CONCURRENCY_RETRY_MS, type LimitCheck, type PermitAnswer, type PermitAsk, type PermitStore } from './permits.js';
import { evalScript } from './redis-client.js';
import { luaScript } from './redis-scripts.js';
import { closedError, storeError } from './store-error.js';

/**
 * One call for all the asks: KEYS are the limits' sorted sets (a rate's holds its starts, scored by
 * start time; a concurrency limit's its permits, scored by expiry), ARGV the retry pause, the number
 * of asks, then per ask `token ttlMs nChecks` and per check `kind keyIndex max perMs`. Time is the
 * server's (TIME), so replicas with skewed clocks still share one window. An ask is decided on its
 * own, after the ones before it: every check passes and each records the token, or none does.
 * Answers: per ask `granted waitMs refusedBy` (refusedBy 0 rate, 1 concurrency).
 */
const TAKE_SCRIPT = luaScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local retry = tonumber(ARGV[1])
local asks = tonumber(ARGV[2])
local pos = 3
local out = {}
for a = 1, asks do
  local token, ttl, nc = ARGV[pos], tonumber(ARGV[pos + 1]), tonumber(ARGV[pos + 2])
  pos = pos + 3
  local checks = {}
  local wait, refused = 0, -1
  for c = 1, nc do
    local kind, key, max, per = ARGV[pos], KEYS[tonumber(ARGV[pos + 1])], tonumber(ARGV[pos + 2]), tonumber(ARGV[pos + 3])
    pos = pos + 4
    checks[c] = { kind, key, per }
    if refused < 0 then
      if kind == 'r' then
        redis.call('ZREMRANGEBYSCORE', key, '-inf', now - per)
        local over = redis.call('ZCARD', key) + 1 - max
        if over > 0 then
          local e = redis.call('ZRANGE', key, over - 1, over - 1, 'WITHSCORES')
          wait, refused = math.max(1, tonumber(e[2]) + per - now), 0
        end
      else
        redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
        if redis.call('ZCARD', key) >= max then
          local e = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
          wait, refused = math.max(1, math.min(retry, tonumber(e[2]) - now)), 1
        end
      end
    end
  end
  if refused < 0 then
    for c = 1, nc do
      local kind, key, per = checks[c][1], checks[c][2], checks[c][3]
      if kind == 'r' then
        redis.call('ZADD', key, now, token)
        redis.call('PEXPIRE', key, per)
      else
        redis.call('ZADD', key, now + ttl, token)
        if redis.call('PTTL', key) < ttl then redis.call('PEXPIRE', key, ttl) end
      end
    end
    out[#out + 1] = 1
  else
    out[#out + 1] = 0
  end
  out[#out + 1] = wait
  out[#out + 1] = refused
end
return out
`);

const RELEASE_SCRIPT = luaScript(`
for i = 1, #KEYS do redis.call('ZREM', KEYS[i], ARGV[1]) end
return 0
`);

/**
 * Permits in the Redis store's server, under its prefix `P`: `dw:limit:<length of P>:{P}:` then
 * `r:<id>` (a rate's window log) or `c:<id>` (a concurrency limit's permits). Shared by every
 * process on the server and prefix. Each key expires when its window (or its last permit) has passed.
 */
export class RedisPermits implements PermitStore {
  readonly scope = 'deployment';
  readonly #client: RedisClientType;
  readonly #base: string;
  readonly #isClosed: () => boolean;

  constructor(client: RedisClientType, prefix: string, isClosed: () => boolean) {
    this.#client = client;
    this.#base = `dw:limit:${prefix.length}:{${prefix}}:`;
    this.#isClosed = isClosed;
  }

  #key(check: LimitCheck): string {
    return `${this.#base}${check.kind === 'rate' ? 'r' : 'c'}:${check.id}`;
  }

  async take(asks: readonly PermitAsk[]): Promise<PermitAnswer[]> {
    if (asks.length === 0) return [];
    const keys: string[] = [];
    const index = new Map<string, number>();
    const args: string[] = [String(CONCURRENCY_RETRY_MS), String(asks.length)];
    const tokens = asks.map(() => randomUUID());
    asks.forEach((ask, a) => {
      args.push(tokens[a] as string, String(Math.ceil(ask.ttlMs)), String(ask.checks.length));
      for (const check of ask.checks) {
        const key = this.#key(check);
        let at = index.get(key);
        if (at === undefined) index.set(key, (at = keys.push(key)));
        args.push(check.kind === 'rate' ? 'r' : 'c', String(at), String(check.max), String(check.kind === 'rate' ? check.perMs : 0));
      }
    });
    const flat = (await this.#eval('take permits', TAKE_SCRIPT, keys, args)) as number[];
    return asks.map((_, a) => {
      const [granted, waitMs, refused] = [flat[a * 3], flat[a * 3 + 1], flat[a * 3 + 2]];
      return granted === 1
        ? { granted: true, token: tokens[a] as string }
        : { granted: false, waitMs: Number(waitMs), refusedBy: refused === 1 ? 'concurrency' : 'rate' };
    });
  }

  async release(token: string, checks: readonly LimitCheck[]): Promise<void> {
    const keys = checks.filter((check) => check.kind === 'concurrency').map((check) => this.#key(check));
    if (keys.length > 0) await this.#eval('release permits', RELEASE_SCRIPT, keys, [token]);
  }

  async #eval(operation: string, script: ReturnType<typeof luaScript>, keys: string[], args: string[]): Promise<unknown> {
    if (this.#isClosed()) throw closedError('redis', operation);
    try {
      return await evalScript(this.#client, script, keys, args);
    } catch (err) {
      throw storeError('redis', operation, err);
    }
  }
}
