import { createHash } from 'node:crypto';

/**
 * Lua scripts of the Redis store. One key per event: `c:<owner>` with the claim TTL while in
 * progress, `d` with the done TTL once done. Redis expires both, so an expired claim is simply
 * absent and the next claimant takes it. A script runs atomically: no other client's command
 * interleaves, so two workers claiming the same key cannot both see it free.
 *
 * A key's failure history lives in a second key, the event's key with `dw:fail:` in place of its
 * leading `dw:idem:` (redis.ts builds every key so), holding
 * `failures:retryAtMs:firstFailedAtMs:lastFailedAtMs` with the done TTL (so it outlives the claim).
 * The scripts derive it from the declared key rather than declaring it too: the rest of the name,
 * hash tag included, is the same, so it is in the same cluster slot, and the batch's arguments stay
 * one per event.
 */
export interface LuaScript {
  source: string;
  sha1: string;
}

/** A script with its SHA-1, for EVALSHA. */
export function luaScript(source: string): LuaScript {
  return { source, sha1: createHash('sha1').update(source).digest('hex') };
}

/** Lua: `history_key(key)`, the name of a key's failure history (see above). */
const HISTORY_KEY = `local function history_key(key) return 'dw:fail:' .. string.sub(key, 9) end
`;

/**
 * Lua: `history_keys(from, to)`, the history keys of KEYS[from..to]: read or deleted in one call per
 * 1,000 keys (a call into Redis costs more than a key in it; unpack has a limit).
 */
const HISTORY_KEYS = `${HISTORY_KEY}local function history_keys(from, to)
  local names = {}
  for i = from, to do names[#names + 1] = history_key(KEYS[i]) end
  return names
end
`;

/**
 * KEYS = the batch; ARGV[1] = owner, ARGV[2] = claim TTL in ms.
 * Returns one letter per key: n(ew), d(one), b(usy) — a string is the cheapest reply to parse —
 * then, for each key not done that has a failure history, `|<position>:<history>` (1-based).
 */
export const CLAIM_SCRIPT = luaScript(`
${HISTORY_KEYS}local mine = 'c:' .. ARGV[1]
local stored = {}
for from = 1, #KEYS, 1000 do
  local got = redis.call('MGET', unpack(history_keys(from, math.min(from + 999, #KEYS))))
  for j = 1, #got do stored[from + j - 1] = got[j] end
end
local states = {}
local histories = {}
for i = 1, #KEYS do
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
      histories[#histories + 1] = '|' .. i .. ':' .. stored[i]
    end
  end
end
return table.concat(states) .. table.concat(histories)
`);

/** KEYS = the batch; ARGV[1] = done TTL in ms. A done mark replaces any claim and failure history. */
export const DONE_SCRIPT = luaScript(`
${HISTORY_KEYS}for i = 1, #KEYS do
  redis.call('SET', KEYS[i], 'd', 'PX', ARGV[1])
end
for from = 1, #KEYS, 1000 do
  redis.call('DEL', unpack(history_keys(from, math.min(from + 999, #KEYS))))
end
return #KEYS
`);

/**
 * KEYS = the failed runs' keys; ARGV[1] = owner, ARGV[2] = done TTL in ms, then per key its
 * failedAtMs and retryAtMs. Returns the new counts (0 for a done key, left as it is). The owner's
 * claim goes as in release; another owner's claim stays (it holds the event now).
 */
export const RECORD_FAILURES_SCRIPT = luaScript(`
${HISTORY_KEY}local mine = 'c:' .. ARGV[1]
local counts = {}
for i = 1, #KEYS do
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
    local history = redis.call('GET', history_key(KEYS[i]))
    if history then
      local count, _, first = string.match(history, '^(%d+):([^:]*):([^:]*):')
      failures = tonumber(count) + 1
      firstFailedAt = first
    end
    redis.call('SET', history_key(KEYS[i]), failures .. ':' .. ARGV[2 + 2 * i] .. ':' .. firstFailedAt .. ':' .. failedAt, 'PX', ARGV[2])
    counts[i] = failures
  end
end
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
