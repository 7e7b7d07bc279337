import { luaScript } from './redis-scripts.js';

/**
 * Lua scripts of the Redis store's deferred runs (redis-deferred.ts names the keys). Every script
 * takes KEYS = [runs hash, chains, heads, handlers] and ARGV[1] = the prefix's key base; a chain's
 * and a handler's sorted sets are named from the base inside the script (all under the prefix's
 * hash tag, so in the slot of the declared keys). A run's value in the hash is its header (JSON:
 * k key, h handler, c chain, s sequence, m chain member, r retryAtMs, d deferredAtMs, w reason, the
 * numbers as strings so that cjson never rounds them) then a newline, then the event's JSON as the
 * worker wrote it: the event is never decoded here, so it comes back exactly.
 */

/** Lua: `header_of(value)`, `with_header(value, header)`, `key_of(member)`, `set_head(chain)`. */
const PRELUDE = `local base = ARGV[1]
local function cut_of(value) return (string.find(value, '\\n', 1, true)) end
local function header_of(value) return cjson.decode(string.sub(value, 1, cut_of(value) - 1)) end
local function with_header(value, header) return cjson.encode(header) .. string.sub(value, cut_of(value)) end
local function key_of(member) return string.sub(member, string.find(member, '|', 1, true) + 1) end
local function set_head(chain)
  local first = redis.call('ZRANGE', base .. 'chain:' .. chain, 0, 0)[1]
  if first then
    redis.call('ZADD', KEYS[3], header_of(redis.call('HGET', KEYS[1], key_of(first))).r, chain)
  else
    redis.call('ZREM', KEYS[3], chain)
    redis.call('ZREM', KEYS[2], chain)
  end
end
`;

/**
 * ARGV[2] = the prefix's claim key base, ARGV[3] = owner, then per run: key, handler, chain,
 * member, retryAtMs, deferredAtMs, reason, value. The owner's claim goes (as RELEASE_SCRIPT); a
 * done key is left out; a key already deferred takes the new retry time and reason.
 */
export const DEFER_SCRIPT = luaScript(`
${PRELUDE}local mine = 'c:' .. ARGV[3]
local touched = {}
for i = 4, #ARGV, 8 do
  local key, handler, chain = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local claim = redis.call('GET', ARGV[2] .. key)
  if claim == mine then redis.call('DEL', ARGV[2] .. key) end
  if claim ~= 'd' then
    local stored = redis.call('HGET', KEYS[1], key)
    if stored then
      local header = header_of(stored)
      header.r = ARGV[i + 4]
      header.w = ARGV[i + 6]
      redis.call('HSET', KEYS[1], key, with_header(stored, header))
      touched[header.c] = true
    else
      redis.call('HSET', KEYS[1], key, ARGV[i + 7])
      redis.call('ZADD', base .. 'chain:' .. chain, 0, ARGV[i + 3])
      redis.call('ZADD', KEYS[2], 0, chain)
      redis.call('ZADD', base .. 'handler:' .. handler, ARGV[i + 5], key)
      redis.call('SADD', KEYS[4], handler)
      touched[chain] = true
    end
  end
end
for chain in pairs(touched) do set_head(chain) end
return 1
`);

/** ARGV[2..] = keys. */
export const REMOVE_SCRIPT = luaScript(`
${PRELUDE}local touched = {}
for i = 2, #ARGV do
  local stored = redis.call('HGET', KEYS[1], ARGV[i])
  if stored then
    local header = header_of(stored)
    redis.call('HDEL', KEYS[1], ARGV[i])
    redis.call('ZREM', base .. 'chain:' .. header.c, header.m)
    local byHandler = base .. 'handler:' .. header.h
    redis.call('ZREM', byHandler, ARGV[i])
    if redis.call('EXISTS', byHandler) == 0 then redis.call('SREM', KEYS[4], header.h) end
    touched[header.c] = true
  end
end
for chain in pairs(touched) do set_head(chain) end
return 1
`);

/** ARGV[2] = key, ARGV[3] = retryAtMs. 1 when the key is deferred, else 0. */
export const RESCHEDULE_SCRIPT = luaScript(`
${PRELUDE}local stored = redis.call('HGET', KEYS[1], ARGV[2])
if not stored then return 0 end
local header = header_of(stored)
header.r = ARGV[3]
redis.call('HSET', KEYS[1], ARGV[2], with_header(stored, header))
set_head(header.c)
return 1
`);

/**
 * ARGV[2] = now ms, ARGV[3] = limit, ARGV[4..] = handlers skipped. The values of the due heads,
 * earliest retry time first (then by chain), read a page of heads at a time past skipped ones.
 */
export const DUE_SCRIPT = luaScript(`
${PRELUDE}local limit = tonumber(ARGV[3])
local skip = {}
for i = 4, #ARGV do skip[ARGV[i]] = true end
local found = {}
local offset = 0
while #found < limit do
  local chains = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', ARGV[2], 'LIMIT', offset, limit)
  if #chains == 0 then break end
  offset = offset + #chains
  for _, chain in ipairs(chains) do
    local first = redis.call('ZRANGE', base .. 'chain:' .. chain, 0, 0)[1]
    local stored = redis.call('HGET', KEYS[1], key_of(first))
    if not skip[header_of(stored).h] then
      found[#found + 1] = stored
      if #found >= limit then break end
    end
  end
end
return found
`);

/** ARGV[2..] = chains. Their positions (1-based) among ARGV[2..] of those with a run. */
export const CHAINS_SCRIPT = luaScript(`
local found = {}
for i = 2, #ARGV do
  if redis.call('ZSCORE', KEYS[3], ARGV[i]) then found[#found + 1] = i - 1 end
end
return found
`);

/**
 * ARGV[2] = limit, ARGV[3], ARGV[4] = the chains' lexicographic range (ZRANGEBYLEX bounds). The
 * values in chain order.
 */
export const LIST_SCRIPT = luaScript(`
${PRELUDE}local limit = tonumber(ARGV[2])
local found = {}
local offset = 0
while #found < limit do
  local chains = redis.call('ZRANGEBYLEX', KEYS[2], ARGV[3], ARGV[4], 'LIMIT', offset, 100)
  if #chains == 0 then break end
  offset = offset + #chains
  for _, chain in ipairs(chains) do
    for _, member in ipairs(redis.call('ZRANGE', base .. 'chain:' .. chain, 0, limit - #found - 1)) do
      found[#found + 1] = redis.call('HGET', KEYS[1], key_of(member))
    end
    if #found >= limit then break end
  end
end
return found
`);

/** Per handler with runs: handler, count, oldest deferredAtMs (as the score's text). */
export const STATS_SCRIPT = luaScript(`
local base = ARGV[1]
local found = {}
for _, handler in ipairs(redis.call('SMEMBERS', KEYS[4])) do
  local byHandler = base .. 'handler:' .. handler
  local oldest = redis.call('ZRANGE', byHandler, 0, 0, 'WITHSCORES')
  if oldest[2] then
    found[#found + 1] = handler
    found[#found + 1] = redis.call('ZCARD', byHandler)
    found[#found + 1] = oldest[2]
  end
end
return found
`);
