-- KEYS: lb, the seasons index, the current-season hash.  ARGV: season id, closed_at (ms), next
-- season id, the player-hash prefix (`{ns}:player:`), the archive prefix (`{ns}:season:<id>:`).
-- `adr season close` (serve/seasons.py): in one atomic step, between two consumer batches,
-- copies the board (lb) to `<archive>lb` and each placed player's reader fields (mu, sigma,
-- tier, n, last_ts, ver) to `<archive>player:<id>`, writes `<archive>meta`, indexes the season
-- by its closing time and names the next season current. An id archived already is refused.
-- O(placed players): about a second of Redis per million (docs/api.md, "Seasons").
if redis.call('ZSCORE', KEYS[2], ARGV[1]) then
  return redis.error_reply('EXISTS season ' .. ARGV[1] .. ' is archived already')
end
local archive = ARGV[5]
local fields = {'mu', 'sigma', 'tier', 'n', 'last_ts', 'ver'}
redis.call('DEL', archive .. 'lb')
redis.call('COPY', KEYS[1], archive .. 'lb')
local members = redis.call('ZRANGE', KEYS[1], 0, -1)
for _, member in ipairs(members) do
  local values = redis.call('HMGET', ARGV[4] .. member, unpack(fields))
  local pairs_ = {}
  for i, name in ipairs(fields) do
    if values[i] then
      pairs_[#pairs_ + 1] = name
      pairs_[#pairs_ + 1] = values[i]
    end
  end
  if #pairs_ > 0 then redis.call('HSET', archive .. 'player:' .. member, unpack(pairs_)) end
end
redis.call('HSET', archive .. 'meta', 'closed_at', ARGV[2], 'players', #members, 'next', ARGV[3])
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
redis.call('HSET', KEYS[3], 'id', ARGV[3], 'started_at', ARGV[2], 'previous', ARGV[1])
return #members
