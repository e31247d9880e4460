-- KEYS: lease, activity, active_mu.  ARGV: holder, cutoff (ms), player key prefix, player ids...
-- Adds to active_mu, with the μ of its hash, each given player still active at the cutoff.
-- Answers the flat list id, mu of the players it added (-1 if the lease is not ours).
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return -1
end
local cutoff = tonumber(ARGV[2])
local added = {}
for i = 4, #ARGV do
  local t = redis.call('ZSCORE', KEYS[2], ARGV[i])
  if t and tonumber(t) > cutoff then
    local mu = redis.call('HGET', ARGV[3] .. ARGV[i], 'mu')
    if mu then
      redis.call('ZADD', KEYS[3], mu, ARGV[i])
      added[#added + 1] = ARGV[i]
      added[#added + 1] = mu
    end
  end
end
return added
