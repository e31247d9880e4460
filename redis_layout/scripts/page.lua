-- KEYS: lb.  ARGV: n, then optionally score, member (the cursor: the last row of the previous
-- page), and last the player-hash key prefix (`{ns}:player:`; the hashes share lb's slot).  Read-only (EVAL_RO): the leaderboard reader's page of `top`, the n rows that follow
-- (score, member) in the board's order (score descending, equal scores by member in descending
-- byte order, as ZREVRANGE orders them), or the first n without a cursor, from one state:
-- {start0, {member, score, ...}, above, {tier, ...}}. start0 is the 0-based rank of the first
-- row; `above` counts the members with a score strictly above the first row's (its shared rank
-- - 1); the tiers are the rows' players' `tier` fields (false where absent), from the same state.
--
-- The cursor names a position in that total order, not a row: the page starts strictly after it
-- whether or not the member is still there at that score. Where it is (the common case) its rank
-- gives the start; else the start is the number of members above the score plus those at the
-- score whose id sorts at or above the cursor's, compared byte by byte (Lua's `<` on strings
-- follows the server's collation locale, not Redis's byte order).
local n = tonumber(ARGV[1])
local start = 0
if #ARGV == 4 then
  local score, member = ARGV[2], ARGV[3]
  local at = redis.call('ZSCORE', KEYS[1], member)
  if at and tonumber(at) == tonumber(score) then
    start = redis.call('ZREVRANK', KEYS[1], member) + 1
  else
    start = redis.call('ZCOUNT', KEYS[1], '(' .. score, '+inf')
    local function at_or_above(a, b)  -- a sorts at or before b among equal scores: a >= b
      local la, lb = #a, #b
      for i = 1, math.min(la, lb) do
        local ca, cb = string.byte(a, i), string.byte(b, i)
        if ca ~= cb then return ca > cb end
      end
      return la >= lb
    end
    for _, tied in ipairs(redis.call('ZREVRANGEBYSCORE', KEYS[1], score, score)) do
      if not at_or_above(tied, member) then break end
      start = start + 1
    end
  end
end
if n < 1 then return {start, {}, 0, {}} end
local rows = redis.call('ZREVRANGE', KEYS[1], start, start + n - 1, 'WITHSCORES')
local above = 0
if rows[2] then above = redis.call('ZCOUNT', KEYS[1], '(' .. rows[2], '+inf') end
local tiers = {}
for i = 1, #rows, 2 do
  tiers[#tiers + 1] = redis.call('HGET', ARGV[#ARGV] .. rows[i], 'tier')
end
return {start, rows, above, tiers}
