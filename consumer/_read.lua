-- Everything one batch is computed from, read at one instant (docs/design.md, "Redis layout").
-- KEYS: offsets, pop, snapshot
-- ARGV: player count, player keys..., pair count, cooldown keys..., partitions...
-- Returns one flat array: 13 fields per player (HMGET order of consumer/_redis_codec.FIELDS),
-- one value per cooldown key, count sigma_hi sigma_lo, one offset per partition, snapshot version.
local FIELDS = {'mu', 'sigma', 'streak', 'phi', 'pool', 'n', 'last_ts', 'tier', 'h_up', 'h_down',
                'window', 'recent', 'ver'}
local out = {}
local n = 0
local players = tonumber(ARGV[1])
for i = 2, players + 1 do
  local values = redis.call('HMGET', ARGV[i], unpack(FIELDS))
  for j = 1, 13 do out[n + j] = values[j] end
  n = n + 13
end
local at = players + 2
local pairs_count = tonumber(ARGV[at])
for i = at + 1, at + pairs_count do
  n = n + 1
  out[n] = redis.call('GET', ARGV[i])
end
local pop = redis.call('HMGET', KEYS[2], 'count', 'sigma_hi', 'sigma_lo')
for j = 1, 3 do out[n + j] = pop[j] end
n = n + 3
for i = at + pairs_count + 1, #ARGV do
  n = n + 1
  out[n] = redis.call('HGET', KEYS[1], ARGV[i])
end
out[n + 1] = redis.call('HGET', KEYS[3], 'version')
return out
