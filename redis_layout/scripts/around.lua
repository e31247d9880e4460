-- KEYS: lb.  ARGV: player, k, the player-hash key prefix (`{ns}:player:`).  Read-only (EVAL_RO): the leaderboard reader's "around", the
-- player's 0-based rank in lb (best first) and the members with scores from k above to k below
-- it, in one atomic read: {rank0, {member, score, ...}, above, {tier, ...}}, or false if the
-- player is not placed. `above` counts the members with a score strictly above the first row's:
-- the shared rank of that row is above + 1 (leaderboard/_board.py, the tie policies); the tiers
-- are the rows' players' `tier` fields (false where absent).
local r = redis.call('ZREVRANK', KEYS[1], ARGV[1])
if not r then return false end
local k = tonumber(ARGV[2])
local lo = r - k
if lo < 0 then lo = 0 end
local rows = redis.call('ZREVRANGE', KEYS[1], lo, r + k, 'WITHSCORES')
local tiers = {}
for i = 1, #rows, 2 do
  tiers[#tiers + 1] = redis.call('HGET', ARGV[3] .. rows[i], 'tier')
end
return {r, rows, redis.call('ZCOUNT', KEYS[1], '(' .. rows[2], '+inf'), tiers}
