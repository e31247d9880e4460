-- One batch of the consumer, applied atomically (docs/design.md, "Redis layout").
-- The order of KEYS, of the ARGV sections and of a player's items is declared once, in
-- redis_layout/apply_contract.py: the header above this comment is generated from it when the
-- script is loaded (K_<key>, S_<section>, I_<player item>, FIELD, PLAYER_ITEMS, SECTIONS).
-- KEYS: offsets, outbox, lb, activity, pop, tier_counts, watermarks, cooldown_due
--       (the zset index of releases before the buckets: only drained), due_buckets, epoch,
--       season_schedule
-- ARGV[1] the player key prefix ("{ns}:player:"); ARGV[2..SECTIONS + 1]: how many ARGV items
-- each section below has; the sections follow in order. Every number is a decimal string (Lua
-- numbers are doubles and would lose int64 digits). Per player the script derives its rank and
-- activity writes from the hash values, so the client sends each value once.
--   players    one msgpack array (or nothing) of PLAYER_ITEMS per player, all msgpack str: id,
--              checked ver ("0" = no hash yet), new ver, then the hash values mu..state in
--              FIELD order (layout 2, redis_layout/player_codec.py), activity time ("" = none);
--              a pool whose model is not ADR adds its leaderboard score (I_SCORE, "" = none)
--   offset_checks partition, next|"", ...
--   tier_counts label, delta, ...     pop: deltas of count, sigma_hi, sigma_lo
--   cooldowns key, ts, ...            offsets partition, next, ...
--   outbox     one msgpack array of [player, rating change] pairs (or nothing)
--   watermarks partition, largest accepted ts, ...
--   sweep      keep (lateness + t_cooldown, ms), floor (wall clock - max_age - keep), bucket
--              width (ms), the prefixes of the cooldown buckets, event-id buckets, cooldown keys
--   event_ids  key, content digest, ts, ...: the ids this batch counts; each key must not
--              exist yet (another instance counted the same id: checked like a ver); indexed
--              and swept with the cooldown keys (schemas/kill_event.md, "Meaning checks")
--   epoch      the pool epoch the outbox's changes carry: checked like a ver (the epoch key
--              must hold it, absent = "0"), so no change is written in an epoch already left
--   season     the season schedule's version the batch was rated under and the ladder (the
--              season the live board shows) it read, both checked like a ver (absent = "0"),
--              so a season closed meanwhile makes the batch rate again; then the ladder after
--              the batch: when larger, the board starts the new season (lb and tier_counts
--              emptied before this batch's ranks and counts are written, the ladder stored);
--              then the placed players the board leaves out (newest event before its season)
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
local V1_ONLY = {'streak', 'phi', 'pool', 'h_up', 'h_down', 'recent'}  -- layout 1's, not 2's
local CHUNK = 2000       -- stay far below Lua's limit on unpack() arguments

local prefix = ARGV[1]
local bounds = {}
local at = SECTIONS + 2
for s = 1, SECTIONS do
  local n = tonumber(ARGV[s + 1])
  bounds[s] = {at, at + n - 1}
  at = at + n
end

local function section(s) return bounds[s][1], bounds[s][2] end

local first, last = section(S_PLAYERS)
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
  local key = prefix .. P[i + I_ID]
  local ver = redis.pcall('HGET', key, 'ver')
  if type(ver) == 'table' then
    return wrongtype(key, 'hash') or redis.error_reply(ver.err)
  end
  if (ver or '0') ~= P[i + I_CHECKED_VER] then
    return {1, 'player', key}
  end
end
local KIND = {[K_OFFSETS] = 'hash', [K_OUTBOX] = 'stream', [K_LB] = 'zset',
  [K_ACTIVITY] = 'zset', [K_POP] = 'hash', [K_TIER_COUNTS] = 'hash', [K_WATERMARKS] = 'hash',
  [K_COOLDOWN_DUE] = 'zset', [K_DUE_BUCKETS] = 'zset', [K_EPOCH] = 'string',
  [K_SEASON_SCHEDULE] = 'hash'}
for k = 1, #KEYS do
  local err = wrongtype(KEYS[k], KIND[k])
  if err then return err end
end
first = section(S_SWEEP)
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
first, last = section(S_COOLDOWNS)
index(cd_index, first, last, 2, 1)
first, last = section(S_EVENT_IDS)
index(id_index, first, last, 3, 2)
for _, e in ipairs(ends) do
  local err = (cd_index[e] and wrongtype(CD_BUCKET .. e, 'list')) or
    (id_index[e] and wrongtype(ID_BUCKET .. e, 'list'))
  if err then return err end
end
first, last = section(S_OFFSET_CHECKS)
for i = first, last, 2 do
  if (redis.call('HGET', KEYS[K_OFFSETS], ARGV[i]) or '') ~= ARGV[i + 1] then
    return {1, 'offset', ARGV[i]}
  end
end
first = section(S_EPOCH)
if (redis.call('GET', KEYS[K_EPOCH]) or '0') ~= ARGV[first] then
  return {1, 'epoch', KEYS[K_EPOCH]}
end
first, last = section(S_SEASON)
local schedule = redis.call('HMGET', KEYS[K_SEASON_SCHEDULE], 'version', 'ladder')
if (schedule[1] or '0') ~= ARGV[first] or (schedule[2] or '0') ~= ARGV[first + 1] then
  return {1, 'season', KEYS[K_SEASON_SCHEDULE]}
end
local unranked = {}
for i = first + 3, last do unranked[ARGV[i]] = true end
first, last = section(S_EVENT_IDS)
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
first, last = section(S_TIER_COUNTS)
for i = first, last, 2 do
  local err = counter(KEYS[K_TIER_COUNTS], ARGV[i])
  if err then return err end
end
for _, field in ipairs({'count', 'sigma_hi', 'sigma_lo'}) do
  local err = counter(KEYS[K_POP], field)
  if err then return err end
end

first = section(S_SEASON)
if tonumber(ARGV[first + 2]) > tonumber(ARGV[first + 1]) then
  -- The first event of a new season: its board starts empty (players enter it as they play).
  redis.call('UNLINK', KEYS[K_LB], KEYS[K_TIER_COUNTS])
  redis.call('HSET', KEYS[K_SEASON_SCHEDULE], 'ladder', ARGV[first + 2])
end
local lb, activity = {}, {}
local function add(t, a, b)
  t[#t + 1] = a
  if b then t[#t + 1] = b end
end
for i = 1, #P, PLAYER_ITEMS do
  local id, mu = P[i + I_ID], P[i + I_MU]
  local v = i + I_MU  -- the hash values, in FIELD order
  local key = prefix .. id
  local added = redis.call('HSET', key, FIELD[1], mu, FIELD[2], P[v + 1], FIELD[3], P[v + 2],
    FIELD[4], P[v + 3], FIELD[5], P[v + 4], FIELD[6], P[v + 5], FIELD[7], P[v + 6],
    'ver', P[i + I_NEW_VER])
  -- A new hash gets every field; a layout-1 hash lacked only `state`: drop its old fields.
  if added > 0 and added <= #FIELD then redis.call('HDEL', key, unpack(V1_ONLY)) end
  if I_SCORE then  -- a model other than ADR: its display rating, "" = not ranked
    local score = P[i + I_SCORE]
    if score ~= '' then add(lb, score, id) end
  elseif P[i + I_TIER] ~= '' and not unranked[id] then  -- ADR: ranked by μ once placed
    add(lb, mu, id)
  end
  local since = P[i + I_ACTIVITY]
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
bulk('ZADD', KEYS[K_LB], lb)
bulk('ZADD', KEYS[K_ACTIVITY], activity)

first, last = section(S_TIER_COUNTS)
for i = first, last, 2 do redis.call('HINCRBY', KEYS[K_TIER_COUNTS], ARGV[i], ARGV[i + 1]) end
first = section(S_POP)
local pop = {'count', 'sigma_hi', 'sigma_lo'}
for j = 0, 2 do
  if ARGV[first + j] ~= '0' then redis.call('HINCRBY', KEYS[K_POP], pop[j + 1], ARGV[first + j]) end
end
-- The cooldown and event-id records: one MSET per chunk, and one RPUSH per bucket and chunk
-- into their index, not a call per key (each redis.call costs Redis about as much as the SET it
-- runs). Appending to a list costs Redis far less than a ZADD into one zset of every record.
first, last = section(S_COOLDOWNS)
local records = {}
for i = first, last, 2 do add(records, ARGV[i], ARGV[i + 1]) end
first, last = section(S_EVENT_IDS)
for i = first, last, 3 do add(records, ARGV[i], ARGV[i + 1]) end
bulk('MSET', nil, records)
first, last = section(S_COOLDOWNS)
if last >= first and redis.call('EXISTS', KEYS[K_COOLDOWN_DUE]) == 1 then
  -- A cooldown key counted again leaves the zset index of earlier releases (while it still
  -- exists): an instance still running that release sweeps by its stale score, and would delete
  -- the key before its new ts passed the horizon (a rolling upgrade runs both releases at once).
  local renewed = {}
  for i = first, last, 2 do renewed[#renewed + 1] = ARGV[i] end
  bulk('ZREM', KEYS[K_COOLDOWN_DUE], renewed)
end
local registry = {}
for _, e in ipairs(ends) do
  if cd_index[e] then bulk('RPUSH', CD_BUCKET .. e, cd_index[e]) end
  if id_index[e] then bulk('RPUSH', ID_BUCKET .. e, id_index[e]) end
  add(registry, e, e)
end
bulk('ZADD', KEYS[K_DUE_BUCKETS], registry)
local records_written = #records / 2
first, last = section(S_OFFSETS)
for i = first, last, CHUNK do
  redis.call('HSET', KEYS[K_OFFSETS], unpack(ARGV, i, math.min(i + CHUNK - 1, last)))
end
first, last = section(S_OUTBOX)
for i = first, last do redis.call('XADD', KEYS[K_OUTBOX], '*', 'm', ARGV[i]) end
first, last = section(S_WATERMARKS)
for i = first, last, CHUNK do
  redis.call('HSET', KEYS[K_WATERMARKS], unpack(ARGV, i, math.min(i + CHUNK - 1, last)))
end

first = section(S_SWEEP)
local horizon = tonumber(ARGV[first + 1])
local low = nil
for _, w in ipairs(redis.call('HVALS', KEYS[K_WATERMARKS])) do
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
local legacy = redis.call('ZRANGEBYSCORE', KEYS[K_COOLDOWN_DUE], '-inf', cut, 'LIMIT', 0, budget)
if #legacy > 0 then
  local cds, ids_ = {}, {}
  for _, key in ipairs(legacy) do
    if key:sub(1, #CD_KEY) == CD_KEY then cds[#cds + 1] = key else ids_[#ids_ + 1] = key end
  end
  expire(cds, true)
  expire(ids_, false)
  bulk('ZREM', KEYS[K_COOLDOWN_DUE], legacy)
end
if budget <= 0 then return {0} end
local due = redis.call('ZRANGEBYSCORE', KEYS[K_DUE_BUCKETS], '-inf', cut, 'LIMIT', 0, budget)
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
  if emptied == 2 then redis.call('ZREM', KEYS[K_DUE_BUCKETS], e) end
  if budget <= 0 then break end
end
return {0}
