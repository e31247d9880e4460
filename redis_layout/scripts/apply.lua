-- One batch of the consumer, applied atomically (docs/design.md, "Redis layout").
-- KEYS: offsets, outbox, lb, activity, pop, tier_counts, watermarks, cooldown_due
--       (the zset index of releases before the buckets: only drained), due_buckets, epoch
-- ARGV[1] the player key prefix ("{ns}:player:"); ARGV[2..12]: how many ARGV items each section
-- below has; the sections follow in order. Every number is a decimal string (Lua numbers are
-- doubles and would lose int64 digits). Per player the script derives its rank and activity
-- writes from the hash values, so the client sends each value once.
--   1 players  one msgpack array (or nothing) of PLAYER_ITEMS per player, all msgpack str: id,
--              checked ver ("0" = no hash yet), new ver, then the hash values mu..state in
--              FIELD order (layout 2, redis_layout/player_codec.py), activity time ("" = none)
--   2 offset checks partition, next|"", ...
--   3 tier counts label, delta, ...   4 pop deltas: count, sigma_hi, sigma_lo
--   5 cooldowns key, ts, ...          6 offsets partition, next, ...
--   7 outbox: one msgpack array of [player, rating change] pairs (or nothing)
--   8 watermarks partition, largest accepted ts, ...
--   9 sweep: keep (lateness + t_cooldown, ms), floor (wall clock - max_age - keep), bucket
--              width (ms), the prefixes of the cooldown buckets, event-id buckets, cooldown keys
--  10 event ids key, content digest, ts, ...: the ids this batch counts; each key must not
--              exist yet (another instance counted the same id: checked like a ver); indexed
--              and swept with the cooldown keys (schemas/kill_event.md, "Meaning checks")
--  11 epoch    the pool epoch the outbox's changes carry: checked like a ver (the epoch key
--              must hold it, absent = "0"), so no change is written in an epoch already left
-- Cooldown and event-id keys expire by event time, not by a TTL: a record whose last written ts
-- is <= max(lowest watermark - keep, floor) is deleted (no event the consumer still accepts can
-- fall in its cooldown), that horizon rounded down to the end of a bucket of BUCKET_MS.
-- The index: a list of record keys per kind and bucket of event time (<prefix><end>, end = the
-- bucket's last ms; a key written twice there is listed twice), the buckets listed in the
-- due_buckets zset (member and score = end). The sweep empties the buckets that end <= the
-- horizon, oldest first, at most 1000 + (records written) entries a call; it deletes each
-- event-id key, and each cooldown key whose value is not a ts after the horizon (one rewritten
-- since is in its newer ts's bucket too). The cooldown_due
-- zset of earlier releases (member = key, score = ts) is drained first by the same rule.
-- A pair's cooldown needs no check of its own: counting a kill always rewrites the attacker, so
-- a concurrent count of the same pair moves the attacker's ver, which is checked.
-- Returns {0} when applied, {1, what, key} when a checked value changed (then nothing is written),
-- an error reply WRONGTYPE/BADVALUE when a key is in the way (then nothing is written either).
local FIELD = {'mu', 'sigma', 'n', 'last_ts', 'tier', 'window', 'state'}
local V1_ONLY = {'streak', 'phi', 'pool', 'h_up', 'h_down', 'recent'}  -- layout 1's, not 2's
local PLAYER_ITEMS = 11  -- id, checked ver, new ver, 7 values, activity time
local CHUNK = 2000       -- stay far below Lua's limit on unpack() arguments

local prefix = ARGV[1]
local bounds = {}
local SECTIONS = 11
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
local KIND = {'hash', 'stream', 'zset', 'zset', 'hash', 'hash', 'hash', 'zset', 'zset', 'string'}
for k = 1, #KIND do
  local err = wrongtype(KEYS[k], KIND[k])
  if err then return err end
end
first = section(9)
local BUCKET_MS = tonumber(ARGV[first + 2])
local CD_BUCKET, ID_BUCKET, CD_KEY = ARGV[first + 3], ARGV[first + 4], ARGV[first + 5]
-- bucket end (a decimal string) -> the record keys this batch indexes there, per kind
local cd_index, id_index, ends = {}, {}, {}
local function index(into, from, to, step, ts_at)
  local last_b, list = nil, nil  -- a batch's records mostly share a bucket: looked up once
  for i = from, to, step do
    local b = math.floor(tonumber(ARGV[i + ts_at]) / BUCKET_MS)
    if b ~= last_b then
      local e = string.format('%.0f', (b + 1) * BUCKET_MS - 1)
      last_b, list = b, into[e]
      if list == nil then
        list = {}
        into[e] = list
        if not ends[e] then
          ends[e] = true
          ends[#ends + 1] = e
        end
      end
    end
    list[#list + 1] = ARGV[i]
  end
end
first, last = section(5)
index(cd_index, first, last, 2, 1)
first, last = section(10)
index(id_index, first, last, 3, 2)
for _, e in ipairs(ends) do
  local err = (cd_index[e] and wrongtype(CD_BUCKET .. e, 'list')) or
    (id_index[e] and wrongtype(ID_BUCKET .. e, 'list'))
  if err then return err end
end
first, last = section(2)
for i = first, last, 2 do
  if (redis.call('HGET', KEYS[1], ARGV[i]) or '') ~= ARGV[i + 1] then
    return {1, 'offset', ARGV[i]}
  end
end
first = section(11)
if (redis.call('GET', KEYS[10]) or '0') ~= ARGV[first] then
  return {1, 'epoch', KEYS[10]}
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
  local err = counter(KEYS[6], ARGV[i])
  if err then return err end
end
for _, field in ipairs({'count', 'sigma_hi', 'sigma_lo'}) do
  local err = counter(KEYS[5], field)
  if err then return err end
end

local lb, activity = {}, {}
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
  if since ~= '' then add(activity, since, id) end
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

first, last = section(3)
for i = first, last, 2 do redis.call('HINCRBY', KEYS[6], ARGV[i], ARGV[i + 1]) end
first = section(4)
local pop = {'count', 'sigma_hi', 'sigma_lo'}
for j = 0, 2 do
  if ARGV[first + j] ~= '0' then redis.call('HINCRBY', KEYS[5], pop[j + 1], ARGV[first + j]) end
end
-- The cooldown and event-id records: one MSET per chunk, and one RPUSH per bucket and chunk
-- into their index, not a call per key (each redis.call costs Redis about as much as the SET it
-- runs). Appending to a list costs Redis far less than a ZADD into one zset of every record.
first, last = section(5)
local records = {}
for i = first, last, 2 do add(records, ARGV[i], ARGV[i + 1]) end
first, last = section(10)
for i = first, last, 3 do add(records, ARGV[i], ARGV[i + 1]) end
bulk('MSET', nil, records)
first, last = section(5)
if last >= first and redis.call('EXISTS', KEYS[8]) == 1 then
  -- A cooldown key counted again leaves the zset index of earlier releases (while it still
  -- exists): an instance still running that release sweeps by its stale score, and would delete
  -- the key before its new ts passed the horizon (a rolling upgrade runs both releases at once).
  local renewed = {}
  for i = first, last, 2 do renewed[#renewed + 1] = ARGV[i] end
  bulk('ZREM', KEYS[8], renewed)
end
local registry = {}
for _, e in ipairs(ends) do
  if cd_index[e] then bulk('RPUSH', CD_BUCKET .. e, cd_index[e]) end
  if id_index[e] then bulk('RPUSH', ID_BUCKET .. e, id_index[e]) end
  add(registry, e, e)
end
bulk('ZADD', KEYS[9], registry)
local records_written = #records / 2
first, last = section(6)
for i = first, last, CHUNK do
  redis.call('HSET', KEYS[1], unpack(ARGV, i, math.min(i + CHUNK - 1, last)))
end
first, last = section(7)
for i = first, last do redis.call('XADD', KEYS[2], '*', 'm', ARGV[i]) end
first, last = section(8)
for i = first, last, CHUNK do
  redis.call('HSET', KEYS[7], unpack(ARGV, i, math.min(i + CHUNK - 1, last)))
end

first = section(9)
local horizon = tonumber(ARGV[first + 1])
local low = nil
for _, w in ipairs(redis.call('HVALS', KEYS[7])) do
  local t = tonumber(w)  -- a value that is no number holds nothing back
  if t ~= nil and (low == nil or t < low) then low = t end
end
if low ~= nil and low - tonumber(ARGV[first]) > horizon then
  horizon = low - tonumber(ARGV[first])
end
-- Rounded down to the last ms of a bucket, the one horizon of the index and of the records it
-- deletes: a cooldown key kept (value > horizon) is still in its newer ts's bucket, which ends
-- after the horizon and so is not swept now (whatever bucket width the writer had).
horizon = math.floor((horizon + 1) / BUCKET_MS) * BUCKET_MS - 1
local cut = string.format('%.0f', horizon)
local budget = 1000 + records_written
-- Deletes the index entries `names` took out: every event-id key, and every cooldown key whose
-- value is not a ts after the horizon (MGET reads another type as nil: deleted, as any record
-- in the way always was; a rewritten key is in its newer bucket too).
local function expire(names, cooldowns)
  local gone = names
  if cooldowns then
    gone = {}
    for i = 1, #names, CHUNK do
      local j = math.min(i + CHUNK - 1, #names)
      local values = redis.call('MGET', unpack(names, i, j))
      for m = i, j do
        local ts = values[m - i + 1]
        ts = ts and ts:match('^%-?%d+$') and #ts <= 19 and tonumber(ts)
        if not ts or ts <= horizon then gone[#gone + 1] = names[m] end
      end
    end
  end
  bulk('DEL', nil, gone)
  budget = budget - #names
end
-- The zset index of earlier releases, drained by the same rule.
local legacy = redis.call('ZRANGEBYSCORE', KEYS[8], '-inf', cut, 'LIMIT', 0, budget)
if #legacy > 0 then
  local cds, ids_ = {}, {}
  for _, key in ipairs(legacy) do
    if key:sub(1, #CD_KEY) == CD_KEY then cds[#cds + 1] = key else ids_[#ids_ + 1] = key end
  end
  expire(cds, true)
  expire(ids_, false)
  bulk('ZREM', KEYS[8], legacy)
end
if budget <= 0 then return {0} end
local due = redis.call('ZRANGEBYSCORE', KEYS[9], '-inf', cut, 'LIMIT', 0, budget)
for _, e in ipairs(due) do
  local emptied = 0
  for _, kind in ipairs({CD_BUCKET, ID_BUCKET}) do
    if budget > 0 then
      -- pcall: a key of another type at a bucket's name (none is written: checked above) ends
      -- only this bucket's sweep, not the script after its writes.
      local names = redis.pcall('LPOP', kind .. e, budget) or {}  -- nil: no such key
      if names.err then
        emptied = emptied + 1
      else
        if #names < budget then emptied = emptied + 1 end
        if #names > 0 then expire(names, kind == CD_BUCKET) end
      end
    end
  end
  if emptied == 2 then redis.call('ZREM', KEYS[9], e) end
  if budget <= 0 then break end
end
return {0}
