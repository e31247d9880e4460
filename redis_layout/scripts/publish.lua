-- KEYS: lease, snapshot.  ARGV: holder, previous version (0: none), computed_at, active_count,
-- mean_mu_active, boundaries.  Writes version = previous + 1 if the lease is ours and nobody
-- published since we read the previous snapshot.  Answers the new version, -1 (not holder) or
-- -2 (the snapshot moved on).
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return -1
end
local current = tonumber(redis.call('HGET', KEYS[2], 'version') or '0')
if current ~= tonumber(ARGV[2]) then
  return -2
end
local version = current + 1
redis.call('HSET', KEYS[2], 'version', version, 'computed_at', ARGV[3],
           'active_count', ARGV[4], 'mean_mu_active', ARGV[5], 'boundaries', ARGV[6])
return version
