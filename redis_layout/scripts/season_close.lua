-- KEYS: lb, the seasons index, the current-season hash, the season schedule, then the watermark
-- hash of each topic the pool's consumers read.  ARGV: season id, closed_at (ms), next season
-- id, the player-hash prefix (`{ns}:player:`), the archive prefix (`{ns}:season:<id>:`), the
-- schedule's version the caller read, its new version, its new text (with the next season's
-- start), the next season's start (event time, ms), how many starts the schedule read had.
-- `adr season close` (serve/seasons.py): in one atomic step, between two consumer batches,
-- copies the board (lb) to `<archive>lb` and each placed player's reader fields (mu, sigma,
-- tier, n, last_ts, ver) to `<archive>player:<id>`, writes `<archive>meta`, indexes the season
-- by its closing time, names the next season current and schedules its start in
-- `{ns}:season_schedule` (redis_layout/season_schedule.py), which the consumer reads with every
-- batch and its write checks. Refused, with nothing written: an id archived already (EXISTS), a
-- schedule changed since the caller read it (STALE), a season scheduled by the last close that
-- has not started on the board yet (NOTSTARTED), a start not after every event time a consumer
-- has accepted (LATE: an event already rated must not fall in the new season).
-- O(placed players): about a second of Redis per million (docs/api.md, "Seasons").
if redis.call('ZSCORE', KEYS[2], ARGV[1]) then
  return redis.error_reply('EXISTS season ' .. ARGV[1] .. ' is archived already')
end
local schedule = redis.call('HMGET', KEYS[4], 'version', 'ladder')
if (schedule[1] or '0') ~= ARGV[6] then
  return redis.error_reply('STALE the season schedule changed while the close was prepared')
end
if (schedule[2] or '0') ~= ARGV[10] then
  return redis.error_reply('NOTSTARTED the season scheduled by the last close has had no ' ..
    'counted event yet: close it once it has started')
end
local start = tonumber(ARGV[9])
for k = 5, #KEYS do
  for _, w in ipairs(redis.call('HVALS', KEYS[k])) do
    local t = tonumber(w)
    if t ~= nil and t >= start then
      return redis.error_reply('LATE the next season must start after every accepted event ' ..
        'time: ' .. KEYS[k] .. ' holds ' .. w)
    end
  end
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
redis.call('HSET', archive .. 'meta', 'closed_at', ARGV[2], 'players', #members, 'next', ARGV[3],
  'next_start_ms', ARGV[9])
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
redis.call('HSET', KEYS[3], 'id', ARGV[3], 'started_at', ARGV[9], 'previous', ARGV[1])
redis.call('HSET', KEYS[4], 'version', ARGV[7], 'seasons', ARGV[8], 'ladder', ARGV[10])
return #members
