-- KEYS: lb, the player's hash, the player's history list.  ARGV: player, history length.
-- Read-only (EVAL_RO): the API's player profile from one state: {rank0 or false, above or false,
-- {mu, sigma, tier, n, last_ts, ver} (each false where absent), {history entry, ...} newest
-- last}. `above` counts the members with a score strictly above the player's.
local r = redis.call('ZREVRANK', KEYS[1], ARGV[1])
local above = false
if r then
  above = redis.call('ZCOUNT', KEYS[1], '(' .. redis.call('ZSCORE', KEYS[1], ARGV[1]), '+inf')
end
local fields = redis.call('HMGET', KEYS[2], 'mu', 'sigma', 'tier', 'n', 'last_ts', 'ver')
local count = tonumber(ARGV[2])
local history = {}
if count > 0 then history = redis.call('LRANGE', KEYS[3], -count, -1) end
return {r, above, fields, history}
