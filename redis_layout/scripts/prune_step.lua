-- KEYS: lease, activity, active_mu, pruned_to.  ARGV: holder, cutoff (ms), chunk.
-- Removes from active_mu the players whose activity time is in (pruned_to, upto], where upto is
-- the cutoff or, when more than `chunk` players expired, the chunk-th one's time (ties included),
-- and records upto.  Answers {removed, scanned, upto, done}.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return {-1, 0, '', 1}
end
local cutoff = ARGV[2]
local last = redis.call('GET', KEYS[4])
local low = '-inf'
if last then
  if tonumber(last) >= tonumber(cutoff) then
    return {0, 0, last, 1}
  end
  low = '(' .. last
end
local upto, done = cutoff, 1
local probe = redis.call('ZRANGEBYSCORE', KEYS[2], low, cutoff, 'WITHSCORES',
                         'LIMIT', tonumber(ARGV[3]) - 1, 1)
if #probe > 0 and tonumber(probe[2]) < tonumber(cutoff) then
  upto, done = probe[2], 0
end
local expired = redis.call('ZRANGEBYSCORE', KEYS[2], low, upto)
local removed = 0
for i = 1, #expired, 1000 do
  removed = removed + redis.call('ZREM', KEYS[3], unpack(expired, i, math.min(i + 999, #expired)))
end
redis.call('SET', KEYS[4], upto)
return {removed, #expired, upto, done}
