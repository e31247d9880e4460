-- One batch of the consumer, applied atomically (docs/design.md, "Redis layout").
-- KEYS: offsets, outbox, lb, activity, active_mu, pop, tier_counts
-- ARGV[1..13]: how many ARGV items each section below has; the sections follow in order.
-- Every number is a decimal string (Lua numbers are doubles and would lose int64 digits).
--   1 player checks   key, ver, ...        ver "0" = no hash yet
--   2 cooldown checks key, ts|"", ...      "" = no key
--   3 offset checks   partition, next|"", ...
--   4 player hashes   key, field, value, ... (HASH_ITEMS items per player)
--   5 lb score, member, ...   6 activity (same)   7 active_mu (same)   8 not active: member, ...
--   9 tier counts label, delta, ...   10 pop deltas: count, sigma_hi, sigma_lo
--   11 cooldowns key, ts, pxat, ...   12 offsets partition, next, ...
--   13 outbox: one msgpack array of [player, rating change] pairs (or nothing)
-- Returns {0} when applied, {1, what, key} when a checked value changed (then nothing is written).
local HASH_ITEMS = 27  -- the key and 13 field/value pairs
local CHUNK = 2000     -- stay far below Lua's limit on unpack() arguments

local bounds = {}
local at = 14
for s = 1, 13 do
  local n = tonumber(ARGV[s])
  bounds[s] = {at, at + n - 1}
  at = at + n
end

local function section(s) return bounds[s][1], bounds[s][2] end

local first, last = section(1)
for i = first, last, 2 do
  if (redis.call('HGET', ARGV[i], 'ver') or '0') ~= ARGV[i + 1] then
    return {1, 'player', ARGV[i]}
  end
end
first, last = section(2)
for i = first, last, 2 do
  if (redis.call('GET', ARGV[i]) or '') ~= ARGV[i + 1] then return {1, 'cooldown', ARGV[i]} end
end
first, last = section(3)
for i = first, last, 2 do
  if (redis.call('HGET', KEYS[1], ARGV[i]) or '') ~= ARGV[i + 1] then
    return {1, 'offset', ARGV[i]}
  end
end

local function bulk(cmd, key, s)
  local f, l = section(s)
  for i = f, l, CHUNK do
    redis.call(cmd, key, unpack(ARGV, i, math.min(i + CHUNK - 1, l)))
  end
end

first, last = section(4)
for i = first, last, HASH_ITEMS do
  redis.call('HSET', unpack(ARGV, i, i + HASH_ITEMS - 1))
end
bulk('ZADD', KEYS[3], 5)
bulk('ZADD', KEYS[4], 6)
bulk('ZADD', KEYS[5], 7)
bulk('ZREM', KEYS[5], 8)
first, last = section(9)
for i = first, last, 2 do redis.call('HINCRBY', KEYS[7], ARGV[i], ARGV[i + 1]) end
first = section(10)
local pop = {'count', 'sigma_hi', 'sigma_lo'}
for j = 0, 2 do
  if ARGV[first + j] ~= '0' then redis.call('HINCRBY', KEYS[6], pop[j + 1], ARGV[first + j]) end
end
first, last = section(11)
for i = first, last, 3 do redis.call('SET', ARGV[i], ARGV[i + 1], 'PXAT', ARGV[i + 2]) end
bulk('HSET', KEYS[1], 12)
first, last = section(13)
for i = first, last do redis.call('XADD', KEYS[2], '*', 'm', ARGV[i]) end
return {0}
