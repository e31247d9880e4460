-- KEYS[1] lease; ARGV[1] holder id, ARGV[2] ttl (ms).  1: ours now (taken or extended), 0: not.
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if holder then
  return 0
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
