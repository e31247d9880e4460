-- One batch of the consumer, applied atomically (docs/design.md, "Redis layout").
-- KEYS: offsets, outbox, lb, activity, active_mu, pop, tier_counts, watermarks, cooldown_due
-- ARGV[1] the player key prefix ("{ns}:player:"); ARGV[2..11]: how many ARGV items each section
-- below has; the sections follow in order. Every number is a decimal string (Lua numbers are
-- doubles and would lose int64 digits). Per player the script derives its rank, activity and
-- active-μ writes from the hash values, so the client sends each value once.
--   1 players  one msgpack array (or nothing) of PLAYER_ITEMS per player, all msgpack str: id,
--              checked ver ("0" = no hash yet), new ver, then the hash values mu..state in
--              FIELD order (layout 2, redis_layout/player_codec.py), activity time ("" = none),
--              active "1"|"0"
--   2 offset checks partition, next|"", ...
--   3 tier counts label, delta, ...   4 pop deltas: count, sigma_hi, sigma_lo
--   5 cooldowns key, ts, ...          6 offsets partition, next, ...
--   7 outbox: one msgpack array of [player, rating change] pairs (or nothing)
--   8 watermarks partition, largest accepted ts, ...
--   9 sweep: keep (lateness + t_cooldown, ms), floor (wall clock - max_age - keep)
--  10 event ids key, content digest, ts, ...: the ids this batch counts; each key must not
--              exist yet (another instance counted the same id: checked like a ver); indexed
--              and swept with the cooldown keys (schemas/kill_event.md, "Meaning checks")
-- Cooldown keys expire by event time, not by a TTL: each is indexed in the cooldown_due zset by
-- its ts, and a key with ts <= max(lowest watermark - keep, floor) is deleted (no event the
-- consumer still accepts can fall in its cooldown), at most 1000 + (pairs written) a call.
-- A pair's cooldown needs no check of its own: counting a kill always rewrites the attacker, so
-- a concurrent count of the same pair moves the attacker's ver, which is checked.
-- Returns {0} when applied, {1, what, key} when a checked value changed (then nothing is written),
-- an error reply WRONGTYPE/BADVALUE when a key is in the way (then nothing is written either).
local FIELD = {'mu', 'sigma', 'n', 'last_ts', 'tier', 'window', 'state'}
local V1_ONLY = {'streak', 'phi', 'pool', 'h_up', 'h_down', 'recent'}  -- layout 1's, not 2's
local PLAYER_ITEMS = 12  -- id, checked ver, new ver, 7 values, activity time, active
local CHUNK = 2000       -- stay far below Lua's limit on unpack() arguments

local prefix = ARGV[1]
local bounds = {}
local SECTIONS = 10
local at = SECTIONS + 2
for s = 1, SECTIONS do
  local n = tonumber(ARGV[s + 1])
  bounds[s] = {at, at + n - 1}
  at = at + n
end

local function section(s) return bounds[s][1], bounds[s][2] end

local first, last = section(1)
local P = {}
if last >= first then P = cmsgpack.unpack(ARGV[first]) end
-- Lua scripts have no rollback: a command that fails after the first write leaves the writes
-- before it in place. So everything a write below could fail on is checked first, and a failed
-- check returns a WRONGTYPE or BADVALUE error before anything is written (the consumer retries
-- it with a log line until an operator moves the key away). OOM and READONLY can only refuse
-- the script's first write (Redis lets a script that has written go on), so they write nothing.
local function wrongtype(key, want)
  local t = redis.call('TYPE', key).ok
  if t ~= 'none' and t ~= want then
    return redis.error_reply('WRONGTYPE ' .. key .. ' holds a ' .. t .. ', the write needs a ' ..
      want)
  end
end
for i = 1, #P, PLAYER_ITEMS do
  local ver = redis.pcall('HGET', prefix .. P[i], 'ver')
  if type(ver) == 'table' then
    return wrongtype(prefix .. P[i], 'hash') or redis.error_reply(ver.err)
  end
  if (ver or '0') ~= P[i + 1] then
    return {1, 'player', prefix .. P[i]}
  end
end
local KIND = {'hash', 'stream', 'zset', 'zset', 'zset', 'hash', 'hash', 'hash', 'zset'}
for k = 1, #KIND do
  local err = wrongtype(KEYS[k], KIND[k])
  if err then return err end
end
first, last = section(2)
for i = first, last, 2 do
  if (redis.call('HGET', KEYS[1], ARGV[i]) or '') ~= ARGV[i + 1] then
    return {1, 'offset', ARGV[i]}
  end
end
first, last = section(10)
local ids = {}
for i = first, last, 3 do ids[#ids + 1] = ARGV[i] end
for i = 1, #ids, CHUNK do  -- one variadic EXISTS per chunk, not one call per id
  local j = math.min(i + CHUNK - 1, #ids)
  if redis.call('EXISTS', unpack(ids, i, j)) > 0 then
    for m = i, j do  -- which: a record (a string) is a conflict; another type is overwritten
      if redis.call('TYPE', ids[m])['ok'] == 'string' then return {1, 'event_id', ids[m]} end
    end
  end
end
local function counter(key, field)  -- HINCRBY fails on anything but a 64-bit integer
  local v = redis.call('HGET', key, field)
  if v and not ((v == '0' or v:match('^%-?[1-9]%d*$')) and #v <= 19) then
    return redis.error_reply('BADVALUE ' .. key .. ' field ' .. field .. ' is not an integer')
  end
end
first, last = section(3)
for i = first, last, 2 do
  local err = counter(KEYS[7], ARGV[i])
  if err then return err end
end
for _, field in ipairs({'count', 'sigma_hi', 'sigma_lo'}) do
  local err = counter(KEYS[6], field)
  if err then return err end
end

local lb, activity, active, inactive = {}, {}, {}, {}
local function add(t, a, b)
  t[#t + 1] = a
  if b then t[#t + 1] = b end
end
for i = 1, #P, PLAYER_ITEMS do
  local id, mu = P[i], P[i + 3]
  local v = i + 2
  local key = prefix .. id
  local added = redis.call('HSET', key, FIELD[1], mu, FIELD[2], P[v + 2], FIELD[3], P[v + 3],
    FIELD[4], P[v + 4], FIELD[5], P[v + 5], FIELD[6], P[v + 6], FIELD[7], P[v + 7],
    'ver', P[i + 2])
  -- A new hash gets all 8 fields; a layout-1 hash lacked only `state`: drop its old fields.
  if added > 0 and added < 8 then redis.call('HDEL', key, unpack(V1_ONLY)) end
  if P[v + 5] ~= '' then add(lb, mu, id) end
  local since = P[i + 10]
  if since ~= '' then
    add(activity, since, id)
    if P[i + 11] == '1' then add(active, mu, id) else add(inactive, id) end
  end
end

local function bulk(cmd, key, items)  -- key nil: the items are the command's whole arguments
  for i = 1, #items, CHUNK do
    if key then
      redis.call(cmd, key, unpack(items, i, math.min(i + CHUNK - 1, #items)))
    else
      redis.call(cmd, unpack(items, i, math.min(i + CHUNK - 1, #items)))
    end
  end
end
bulk('ZADD', KEYS[3], lb)
bulk('ZADD', KEYS[4], activity)
bulk('ZADD', KEYS[5], active)
bulk('ZREM', KEYS[5], inactive)

first, last = section(3)
for i = first, last, 2 do redis.call('HINCRBY', KEYS[7], ARGV[i], ARGV[i + 1]) end
first = section(4)
local pop = {'count', 'sigma_hi', 'sigma_lo'}
for j = 0, 2 do
  if ARGV[first + j] ~= '0' then redis.call('HINCRBY', KEYS[6], pop[j + 1], ARGV[first + j]) end
end
-- The cooldown and event-id records: one MSET and one ZADD per chunk, not a call per key (each
-- redis.call costs Redis about as much as the SET it runs).
first, last = section(5)
local records, due = {}, {}
for i = first, last, 2 do
  add(records, ARGV[i], ARGV[i + 1])
  add(due, ARGV[i + 1], ARGV[i])
end
first, last = section(10)
for i = first, last, 3 do
  add(records, ARGV[i], ARGV[i + 1])
  add(due, ARGV[i + 2], ARGV[i])
end
bulk('MSET', nil, records)
bulk('ZADD', KEYS[9], due)
local pairs_written = #due / 2
first, last = section(6)
for i = first, last, CHUNK do
  redis.call('HSET', KEYS[1], unpack(ARGV, i, math.min(i + CHUNK - 1, last)))
end
first, last = section(7)
for i = first, last do redis.call('XADD', KEYS[2], '*', 'm', ARGV[i]) end
first, last = section(8)
for i = first, last, CHUNK do
  redis.call('HSET', KEYS[8], unpack(ARGV, i, math.min(i + CHUNK - 1, last)))
end

first = section(9)
local horizon = tonumber(ARGV[first + 1])
local low = nil
for _, w in ipairs(redis.call('HVALS', KEYS[8])) do
  local t = tonumber(w)  -- a value that is no number holds nothing back
  if t ~= nil and (low == nil or t < low) then low = t end
end
if low ~= nil and low - tonumber(ARGV[first]) > horizon then
  horizon = low - tonumber(ARGV[first])
end
local expired = redis.call('ZRANGEBYSCORE', KEYS[9], '-inf', string.format('%.0f', horizon),
  'LIMIT', 0, 1000 + pairs_written)
if #expired > 0 then
  for i = 1, #expired, CHUNK do
    redis.call('DEL', unpack(expired, i, math.min(i + CHUNK - 1, #expired)))
  end
  bulk('ZREM', KEYS[9], expired)
end
return {0}
