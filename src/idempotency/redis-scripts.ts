import { createHash } from 'node:crypto';

/**
 * Lua scripts of the Redis store. One key per event: `c:<owner>` with the claim TTL while in
 * progress, `d` with the done TTL once done. Redis expires both, so an expired claim is simply
 * absent and the next claimant takes it. A script runs atomically: no other client's command
 * interleaves, so two workers claiming the same key cannot both see it free.
 *
 * Failure histories live in one hash per prefix (redis.ts names it; it is always the last of
 * KEYS), a field per event key holding `failures:retryAtMs:firstFailedAtMs:lastFailedAtMs:expiresAtMs`.
 * Why one hash rather than a key per event: a claim reads the histories of its whole batch in one
 * HMGET whose field names are the batch's keys as given, so a batch without failures costs one
 * lookup of a hash that usually does not exist, instead of building and looking up a second key name
 * per event. Redis (before 7.4) cannot expire a field, so each value carries its expiry, checked
 * against the server's clock (TIME), and the hash's own TTL is pushed to the done TTL at every
 * failure: the hash goes once its prefix has had no failure for that long, and a done mark deletes
 * its key's field meanwhile.
 */
export interface LuaScript {
  source: string;
  sha1: string;
}

/** A script with its SHA-1, for EVALSHA. */
export function luaScript(source: string): LuaScript {
  return { source, sha1: createHash('sha1').update(source).digest('hex') };
}

/** Lua: `n`, the number of event keys; `histories`, the hash; `now_ms()`, the server's clock. */
const PRELUDE = `local n = #KEYS - 1
local histories = KEYS[#KEYS]
local function now_ms()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end
`;

/** Keys per HMGET / HDEL call: unpack has a limit. */
const CHUNK = 1_000;

/**
 * KEYS = the batch, then the histories hash; ARGV[1] = owner, ARGV[2] = claim TTL in ms.
 * Returns one letter per key: n(ew), d(one), b(usy) — a string is the cheapest reply to parse —
 * then, for each key not done that has an unexpired history, `|<position>:<history>` (1-based).
 */
export const CLAIM_SCRIPT = luaScript(`
${PRELUDE}local mine = 'c:' .. ARGV[1]
local stored = {}
local now = 0
if redis.call('EXISTS', histories) == 1 then
  now = now_ms()
  for from = 1, n, ${CHUNK} do
    local got = redis.call('HMGET', histories, unpack(KEYS, from, math.min(from + ${CHUNK - 1}, n)))
    for j = 1, #got do stored[from + j - 1] = got[j] end
  end
end
local states = {}
local found = {}
for i = 1, n do
  local value = redis.call('GET', KEYS[i])
  if value == 'd' then
    states[i] = 'd'
  else
    if value and value ~= mine then
      states[i] = 'b'
    else
      redis.call('SET', KEYS[i], mine, 'PX', ARGV[2])
      states[i] = 'n'
    end
    if stored[i] then
      local history, expires = string.match(stored[i], '^(.*):(%d+)$')
      if tonumber(expires) > now then found[#found + 1] = '|' .. i .. ':' .. history end
    end
  end
end
return table.concat(states) .. table.concat(found)
`);

/** KEYS = the batch, then the histories hash; ARGV[1] = done TTL in ms. A done mark replaces any claim and history. */
export const DONE_SCRIPT = luaScript(`
${PRELUDE}for i = 1, n do
  redis.call('SET', KEYS[i], 'd', 'PX', ARGV[1])
end
if redis.call('EXISTS', histories) == 1 then
  for from = 1, n, ${CHUNK} do
    redis.call('HDEL', histories, unpack(KEYS, from, math.min(from + ${CHUNK - 1}, n)))
  end
end
return n
`);

/**
 * KEYS = the keys, then their dead-letter marks (key.ts, deadLetteredKey) in the same order, then
 * the histories hash; ARGV[1] = done TTL in ms. A key not done yet gets its done mark and its
 * dead-letter mark; a done one (applied by another worker meanwhile) is left as it is.
 */
export const DEAD_LETTERED_SCRIPT = luaScript(`
${PRELUDE}local half = n / 2
local marked = {}
for i = 1, half do
  if redis.call('GET', KEYS[i]) ~= 'd' then
    redis.call('SET', KEYS[i], 'd', 'PX', ARGV[1])
    redis.call('SET', KEYS[half + i], 'd', 'PX', ARGV[1])
    marked[#marked + 1] = KEYS[i]
  end
end
if #marked > 0 and redis.call('EXISTS', histories) == 1 then
  for from = 1, #marked, ${CHUNK} do
    redis.call('HDEL', histories, unpack(marked, from, math.min(from + ${CHUNK - 1}, #marked)))
  end
end
return #marked
`);

/**
 * KEYS = the failed runs' keys, then the histories hash; ARGV[1] = owner, ARGV[2] = done TTL in
 * ms, then per key its failedAtMs and retryAtMs. Returns the new counts (0 for a done key, left as
 * it is). The owner's claim goes as in release; another owner's claim stays (it holds the event now).
 */
export const RECORD_FAILURES_SCRIPT = luaScript(`
${PRELUDE}local mine = 'c:' .. ARGV[1]
local now = now_ms()
local expires = now + tonumber(ARGV[2])
local counts = {}
local recorded = false
for i = 1, n do
  local value = redis.call('GET', KEYS[i])
  if value == 'd' then
    counts[i] = 0
  else
    if value == mine then
      redis.call('DEL', KEYS[i])
    end
    local failedAt = ARGV[1 + 2 * i]
    local failures = 1
    local firstFailedAt = failedAt
    local history = redis.call('HGET', histories, KEYS[i])
    if history then
      local count, first, until_ms = string.match(history, '^(%d+):[^:]*:([^:]*):[^:]*:(%d+)$')
      if tonumber(until_ms) > now then
        failures = tonumber(count) + 1
        firstFailedAt = first
      end
    end
    redis.call('HSET', histories, KEYS[i], failures .. ':' .. ARGV[2 + 2 * i] .. ':' .. firstFailedAt .. ':' .. failedAt .. ':' .. expires)
    counts[i] = failures
    recorded = true
  end
end
if recorded then redis.call('PEXPIRE', histories, ARGV[2]) end
return counts
`);

/** KEYS = the batch; ARGV[1] = owner. Compare-and-delete: only the owner's own claims go. */
export const RELEASE_SCRIPT = luaScript(`
local mine = 'c:' .. ARGV[1]
local released = 0
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) == mine then
    redis.call('DEL', KEYS[i])
    released = released + 1
  end
end
return released
`);
