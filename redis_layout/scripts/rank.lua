-- KEYS: lb, the player's hash.  ARGV: player.  Read-only (EVAL_RO): the leaderboard reader's
-- "rank", one player's 0-based rank in lb (false while unplaced) and the hash's mu and tier, from
-- one state: {rank0 or false, mu or false, tier or false}.
local r = redis.call('ZREVRANK', KEYS[1], ARGV[1])
local fields = redis.call('HMGET', KEYS[2], 'mu', 'tier')
return {r, fields[1], fields[2]}
