-- KEYS: activity.  ARGV: min (a ZRANGEBYSCORE bound: '(' .. cutoff, or a score), count,
-- player key prefix.  Read-only (the tier job's read of μ over A, one page per call).
-- Answers the flat list member, score, mu of the first `count` members of activity scored from
-- min on, in the zset's (score, member) order; mu is the `mu` field of the member's hash: nil
-- when the hash or the field is missing, an error reply when the key holds another type.
local page = redis.call('ZRANGEBYSCORE', KEYS[1], ARGV[1], '+inf', 'WITHSCORES', 'LIMIT', 0,
                        tonumber(ARGV[2]))
local out = {}
for i = 1, #page, 2 do
  out[#out + 1] = page[i]
  out[#out + 1] = page[i + 1]
  out[#out + 1] = redis.pcall('HGET', ARGV[3] .. page[i], 'mu') or false
end
return out
