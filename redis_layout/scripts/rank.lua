-- KEYS: lb, the player's hash.  ARGV: player.  Read-only (EVAL_RO): the leaderboard reader's
-- "rank", one player's 0-based rank in lb (false while unplaced) and the hash's mu and tier, from
-- one state: {rank0 or false, mu or false, tier or false, above or false}; `above` counts the
-- members with a score strictly above the player's (the shared rank is above + 1).
local r = redis.call('ZREVRANK', KEYS[1], ARGV[1])
local fields = redis.call('HMGET', KEYS[2], 'mu', 'tier')
local above = false
if r then
  above = redis.call('ZCOUNT', KEYS[1], '(' .. redis.call('ZSCORE', KEYS[1], ARGV[1]), '+inf')
end
return {r, fields[1], fields[2], above}
