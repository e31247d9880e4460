-- Raise the pool's epoch (consumer/_epoch.py): KEYS[1] the epoch key; ARGV[1] the least value
-- the caller wants (the wall clock in ms, or more). Sets max(stored + 1, ARGV[1]) and returns it
-- as a decimal string. A stored value that is no integer counts as 0 (it is overwritten).
-- Integers up to 2^53 are exact in Lua's doubles; a wall clock in ms is about 2^41.
local stored = redis.call('GET', KEYS[1])
stored = stored and stored:match('^%d+$') and tonumber(stored) or 0
local want = tonumber(ARGV[1])
local epoch = math.max(stored + 1, want)
local text = string.format('%.0f', epoch)
redis.call('SET', KEYS[1], text)
return text
