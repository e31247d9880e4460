-- KEYS: activity.  ARGV: min (a ZRANGEBYSCORE bound: '(' .. cutoff, or a score), count,
-- player key prefix, then (a pool whose model is not ADR) the hash fields to read.
-- Read-only (the tier job's read of μ over A, one page per call).
-- Reads the first `count` members of activity scored from min on, in the zset's (score, member)
-- order, and answers {size, last score, how many of them have the last score, then member, mu
-- for each}; mu is the `mu` field of the member's hash: nil when the hash or the field is
-- missing, an error reply when the key holds another type. With fields given, each member's
-- value is the HMGET of those fields instead (the model's codec reads its display rating).
local fields = {}
for i = 4, #ARGV do fields[#fields + 1] = ARGV[i] end
local page = redis.call('ZRANGEBYSCORE', KEYS[1], ARGV[1], '+inf', 'WITHSCORES', 'LIMIT', 0,
                        tonumber(ARGV[2]))
local last = page[#page] or ''
local out = {#page / 2, last, 0}
for i = 1, #page, 2 do
  if page[i + 1] == last then out[3] = out[3] + 1 end
  out[#out + 1] = page[i]
  if #fields == 0 then
    out[#out + 1] = redis.pcall('HGET', ARGV[3] .. page[i], 'mu') or false
  else
    out[#out + 1] = redis.pcall('HMGET', ARGV[3] .. page[i], unpack(fields))
  end
end
return out
