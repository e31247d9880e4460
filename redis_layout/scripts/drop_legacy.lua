-- KEYS: lease, active_mu, pruned_to (the tier job's keys of releases before 2026-12-05).
-- ARGV: holder.  Unlinks both; answers how many existed (-1 if the lease is not ours).
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return -1
end
return redis.call('UNLINK', KEYS[2], KEYS[3])
