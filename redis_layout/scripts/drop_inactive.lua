-- KEYS: lease, activity, active_mu.  ARGV: holder, cutoff (ms), player ids...
-- Removes from active_mu each given player that is not active at the cutoff (checked here, so a
-- player the consumer re-activated in the meantime stays).  Answers how many it removed.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return -1
end
local cutoff = tonumber(ARGV[2])
local removed = 0
for i = 3, #ARGV do
  local t = redis.call('ZSCORE', KEYS[2], ARGV[i])
  if (not t) or tonumber(t) <= cutoff then
    removed = removed + redis.call('ZREM', KEYS[3], ARGV[i])
  end
end
return removed
