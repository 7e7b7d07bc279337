import { createHash } from 'node:crypto';

/**
 * Lua scripts of the Redis store. One key per event: `c:<owner>` with the claim TTL while in
 * progress, `d` with the done TTL once done. Redis expires both, so an expired claim is simply
 * absent and the next claimant takes it. A script runs atomically: no other client's command
 * interleaves, so two workers claiming the same key cannot both see it free.
 */
export interface LuaScript {
  source: string;
  sha1: string;
}

/** A script with its SHA-1, for EVALSHA. */
export function luaScript(source: string): LuaScript {
  return { source, sha1: createHash('sha1').update(source).digest('hex') };
}

/**
 * KEYS = the batch; ARGV[1] = owner, ARGV[2] = claim TTL in ms.
 * Returns one letter per key: n(ew), d(one), b(usy) — a string is the cheapest reply to parse.
 */
export const CLAIM_SCRIPT = luaScript(`
local mine = 'c:' .. ARGV[1]
local states = {}
for i = 1, #KEYS do
  local value = redis.call('GET', KEYS[i])
  if value == 'd' then
    states[i] = 'd'
  elseif value and value ~= mine then
    states[i] = 'b'
  else
    redis.call('SET', KEYS[i], mine, 'PX', ARGV[2])
    states[i] = 'n'
  end
end
return table.concat(states)
`);

/** KEYS = the batch; ARGV[1] = done TTL in ms. A done mark replaces any claim. */
export const DONE_SCRIPT = luaScript(`
for i = 1, #KEYS do
  redis.call('SET', KEYS[i], 'd', 'PX', ARGV[1])
end
return #KEYS
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
