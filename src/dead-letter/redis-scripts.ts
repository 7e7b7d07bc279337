import { luaScript } from '../idempotency/redis-scripts.js';

/**
 * Lua scripts of the Redis sink: each runs atomically, so a record's hash, the index and the dead
 * counts never disagree, and two writers of one record cannot both see it absent.
 */

/**
 * KEYS = the record, the index, its prefix's dead counts, the prefixes set.
 * ARGV[1] = the stored record as JSON, ARGV[2] = its index member, ARGV[3] = its dead-counts field,
 * ARGV[4] = its prefix. A record still `dead` is kept as it is (0); an absent one is added, and a
 * replayed or purged one starts over as `dead` under its new member (1).
 */
export const WRITE_SCRIPT = luaScript(`
local state = redis.call('HGET', KEYS[1], 'state')
if state == 'dead' then return 0 end
if state then redis.call('ZREM', KEYS[2], redis.call('HGET', KEYS[1], 'member')) end
redis.call('HSET', KEYS[1], 'state', 'dead', 'member', ARGV[2], 'count', ARGV[3], 'json', ARGV[1])
redis.call('ZADD', KEYS[2], 0, ARGV[2])
redis.call('HINCRBY', KEYS[3], ARGV[3], 1)
redis.call('SADD', KEYS[4], ARGV[4])
return 1
`);

/**
 * KEYS[1] = the record, KEYS[2] = its prefix's dead counts; ARGV[1] = the state expected,
 * ARGV[2] = the new state, ARGV[3] = the new record JSON. Compare-and-set: 1 when replaced.
 */
export const UPDATE_SCRIPT = luaScript(`
local state = redis.call('HGET', KEYS[1], 'state')
if state ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'state', ARGV[2], 'json', ARGV[3])
if state == 'dead' and ARGV[2] ~= 'dead' then
  local field = redis.call('HGET', KEYS[1], 'count')
  if redis.call('HINCRBY', KEYS[2], field, -1) <= 0 then redis.call('HDEL', KEYS[2], field) end
end
return 1
`);
