-- KEYS[1] lease; ARGV[1] holder id.  1: released, 0: it was not ours.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
